/**
 * The relay's HTTP connection limits (`tunnel-relay serve --header-timeout ... --max-connections-per-source`):
 * how long a request head, a request body and an idle keep-alive connection may take, and how many
 * connections the relay holds in total and per source address. docs/LIMITS.md explains each value.
 */

export interface HttpLimits {
  /** The request line and headers must arrive within this (from the connection, or a keep-alive request's first byte). */
  headerTimeoutMs: number;
  /** A request body must arrive within this after its headers (unless the relay is already streaming the answer). */
  bodyTimeoutMs: number;
  /** A keep-alive connection with no request in flight is closed after this. */
  idleTimeoutMs: number;
  /** TCP connections held at once, in every state (established tunnels included). */
  maxConnections: number;
  /**
   * Connections per source address (IPv6: per /64) that have not yet finished a request or an upgrade; null = no
   * such cap. Finished connections (idle keep-alive, /derp, CONNECT, path-proxy streams) do not count, so many
   * agents behind one NAT address are not locked out.
   */
  maxPendingPerSource: number | null;
}

/** Defaults of the timeouts, in seconds (the flags take seconds). */
export const DEFAULT_HEADER_TIMEOUT_S = 15;
export const DEFAULT_BODY_TIMEOUT_S = 30;
/** Longer than the lease period plus jitter (60 s x 1.1), so a renewing agent keeps its TLS connection. */
export const DEFAULT_IDLE_TIMEOUT_S = 90;
/** Timeouts accepted by the flags: 1 s to 1 h. */
export const TIMEOUT_RANGE_S = { min: 1, max: 3_600 } as const;

/** Default total cap when the open-file limit allows it (above the DERP server's 10,000 clients). */
export const DEFAULT_MAX_CONNECTIONS = 16_384;
/** Descriptors kept free of connections for the store, logs and the listening sockets. */
export const RESERVED_DESCRIPTORS = 64;
/** Smallest total cap accepted. */
export const MIN_MAX_CONNECTIONS = 16;
/**
 * Default per-source cap on pending connections (off with --plain-http: the terminator is the only source): room
 * for a client that opens a couple of hundred tunnels at once (each in its TLS handshake together), far below
 * the total cap.
 */
export const DEFAULT_MAX_PENDING_PER_SOURCE = 256;

/** The total cap when none is configured: the default, lowered to fit the open-file limit (null = unknown). */
export function defaultMaxConnections(openFileLimit: number | null): number {
  if (openFileLimit === null) return DEFAULT_MAX_CONNECTIONS;
  return Math.max(
    MIN_MAX_CONNECTIONS,
    Math.min(DEFAULT_MAX_CONNECTIONS, openFileLimit - RESERVED_DESCRIPTORS),
  );
}

/**
 * The warning to log when `maxConnections` leaves fewer than RESERVED_DESCRIPTORS descriptors of the open-file
 * limit free (the relay would then fail to accept, EMFILE, before the cap protects it); null when it fits.
 */
export function openFilesWarning(maxConnections: number, openFileLimit: number | null): string | null {
  if (openFileLimit === null || maxConnections + RESERVED_DESCRIPTORS <= openFileLimit) return null;
  return (
    `--max-connections ${maxConnections} is over the open-file limit ${openFileLimit} less ` +
    `${RESERVED_DESCRIPTORS}: raise the limit (ulimit -n, LimitNOFILE) or lower --max-connections to ` +
    `${Math.max(MIN_MAX_CONNECTIONS, openFileLimit - RESERVED_DESCRIPTORS)}`
  );
}

/**
 * How often Node checks request heads against the header timeout: a quarter of it, at most 1 s, so a slow head is
 * cut at most 25 % (or 1 s) after its deadline.
 */
export function headerCheckIntervalMs(headerTimeoutMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(headerTimeoutMs / 4)));
}
