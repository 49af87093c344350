/**
 * The project's one error module. Every error a user or a peer can cause carries a stable string
 * code from ERROR_CODES; messages name the bad value (never a secret) and what would be valid.
 *
 * docs/ERRORS.md lists every code; shared/errors.test.ts checks the two agree.
 * Each area adds its codes in its own section below.
 */

export interface ErrorCodeInfo {
  /** HTTP status used when the error crosses the relay API. */
  readonly status: number;
  /** One line for docs/ERRORS.md. */
  readonly summary: string;
}

export const ERROR_CODES = {
  // --- general -------------------------------------------------------------------------------
  INTERNAL: { status: 500, summary: 'An unexpected internal failure; the message carries no detail.' },
  BAD_INPUT: { status: 400, summary: 'A value given by the caller is not valid; the message names it.' },
  BAD_CONFIG: {
    status: 400,
    summary: 'A configuration key has an invalid value; the message names the key.',
  },
  TIMEOUT: { status: 504, summary: 'An operation did not complete within its time limit.' },
  CLOSED: { status: 503, summary: 'The object was closed before the operation completed.' },
  LIMIT_EXCEEDED: { status: 429, summary: 'A cap (see docs/LIMITS.md) was reached; the message names it.' },

  // --- wire parsing (shared by every codec) ---------------------------------------------------
  WIRE_TRUNCATED: { status: 400, summary: 'A message is shorter than its layout requires.' },
  WIRE_TOO_LARGE: { status: 413, summary: 'A length read off the wire is over its limit.' },
  WIRE_BAD_TYPE: { status: 400, summary: 'A message type or version field has an unknown value.' },
  WIRE_MALFORMED: { status: 400, summary: 'A message is well sized but its contents are invalid.' },

  // --- keys and crypto -----------------------------------------------------------------------
  KEY_INVALID: { status: 400, summary: 'A key is not 32 bytes of standard base64 (44 characters) or hex.' },
  KEY_UNUSABLE: {
    status: 400,
    summary: 'A public key is a low-order or non-canonical Curve25519 point; the message names it.',
  },
  KEY_RESERVED: {
    status: 409,
    summary: "A public key is reserved for the relay's hub node; the message names it.",
  },
  WG_CLI_MISSING: {
    status: 500,
    summary: 'The wireguard-tools `wg` binary is not installed or not on PATH.',
  },
  WG_CLI_FAILED: {
    status: 500,
    summary: 'The `wg` command exited with an error; the message quotes its stderr.',
  },

  // --- WireGuard engine ----------------------------------------------------------------------
  WG_HANDSHAKE_FAILED: {
    status: 400,
    summary: 'A handshake message failed authentication or a protocol check.',
  },
  WG_UNKNOWN_PEER: { status: 404, summary: 'A handshake names a static key that is not a configured peer.' },
  WG_REPLAY: { status: 400, summary: 'A handshake timestamp or transport counter was already seen.' },
  WG_NO_SESSION: { status: 503, summary: 'No valid keypair for the peer; a handshake has been started.' },
  WG_PEER_LIMIT: { status: 429, summary: 'The device already holds the maximum number of peers.' },

  // --- control plane (relay API) -------------------------------------------------------------
  UNAUTHENTICATED: {
    status: 401,
    summary: 'No credential, or a credential that is wrong, expired or revoked.',
  },
  FORBIDDEN: { status: 403, summary: 'The credential is valid but its role does not allow this action.' },
  NOT_FOUND: { status: 404, summary: 'The named object does not exist.' },
  CONFLICT: {
    status: 409,
    summary: 'The name is taken, or the object is in a state that forbids the action.',
  },
  RATE_LIMITED: {
    status: 429,
    summary:
      'Too many attempts (failed registrations of a source, kubeconfigs minted by a key, writes by a key past its --write-budget); retry after the Retry-After seconds.',
  },
  PAYLOAD_TOO_LARGE: { status: 413, summary: 'The request body is over the limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, summary: 'The request body is not application/json.' },
  REQUEST_TIMEOUT: {
    status: 408,
    summary: 'The request head or body did not arrive within its time limit; the connection is closed.',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    summary: 'The request line and headers are over the size limit; the connection is closed.',
  },
  EXPECTATION_FAILED: { status: 417, summary: 'The request has an Expect header other than 100-continue.' },
  UPGRADE_REQUIRED: {
    status: 426,
    summary: 'The endpoint is served over another protocol; the message names it.',
  },
  AT_CAPACITY: { status: 503, summary: 'The relay is at a connection limit (docs/LIMITS.md); retry later.' },
  INVALID_NAME: { status: 400, summary: 'A cluster or group name is not a DNS-1123 label.' },
  BOOTSTRAP_REJECTED: {
    status: 401,
    summary:
      'The bootstrap PSK or token was refused (wrong, used, expired, rotated, or the cluster deleted; which is not said, the audit log has it); fix: `cluster rotate-psk NAME`, then the new join command.',
  },
  CLUSTER_DENIED: { status: 403, summary: 'The cluster registration was denied by an administrator.' },
  NO_AGENT_WAITING: {
    status: 409,
    summary: '`cluster accept` on a cluster where no agent has registered yet: there is nothing to accept.',
  },
  AGENT_REPLICAS_FULL: {
    status: 409,
    summary:
      "A new agent key registered with the cluster's PSK while the cluster already holds its `--agent-replicas` agent keys; fix: unjoin one, or create the cluster with more replicas.",
  },
  AGENT_REPLICAS_INVALID: {
    status: 400,
    summary: 'An agent replica count is not a whole number 1..10; the message names the value.',
  },
  CA_PIN_MISMATCH: { status: 495, summary: "The relay's TLS certificate does not match the pinned sha256." },
  INSTALL_LINK_USED: {
    status: 410,
    summary: 'The one-time install URL was already fetched; `cluster rotate-psk` issues a new one.',
  },
  INSTALL_LINK_EXPIRED: {
    status: 410,
    summary: 'The install URL ended with its PSK (expired, replaced by rotate-psk, or used to join).',
  },

  // --- relay data plane (DERP-like) ----------------------------------------------------------
  DERP_AUTH_FAILED: {
    status: 401,
    summary: 'A relay client could not prove its key, or its key is not admitted.',
  },
  DERP_PROTOCOL: {
    status: 400,
    summary: 'A relay peer broke the frame protocol; only that connection is closed.',
  },

  // --- streams (ARQ and mux) -----------------------------------------------------------------
  STREAM_RESET: { status: 502, summary: 'The stream was reset by the other side.' },
  STREAM_REFUSED: { status: 403, summary: "The agent refused the stream's target (not on its allowlist)." },
  STREAM_LIMIT: { status: 429, summary: 'The peer already has the maximum number of open streams.' },
  UPSTREAM_FAILED: { status: 502, summary: 'The agent could not connect to the upstream target.' },
  AGENT_NOT_CONNECTED: { status: 503, summary: 'The cluster exists but its agent has no live session.' },

  // --- relay replica mesh ---------------------------------------------------------------------
  MESH_UNAUTHENTICATED: {
    status: 403,
    summary: 'A request carried the mesh header without the fleet mesh key; it is refused, never forwarded.',
  },
  MESH_UNREACHABLE: {
    status: 502,
    summary: "The replica holding the agent's session could not be reached over the mesh.",
  },

  // --- CLIs and the agent's relay client ------------------------------------------------------
  RELAY_UNREACHABLE: {
    status: 503,
    summary: 'The relay could not be reached (refused, DNS, reset or TLS failure); names the URL.',
  },
  RELAY_CERT_UNTRUSTED: {
    status: 502,
    summary:
      'The relay answered with a certificate this client does not trust; pass --ca-pin (printed by the relay) or --ca-file.',
  },
  RELAY_BAD_RESPONSE: { status: 502, summary: 'The relay answered with an unexpected status or body.' },
  STATE_MISSING: {
    status: 404,
    summary: 'The agent state directory has no saved registration; run `tunnel-client join` first.',
  },

  // --- secret files on disk ------------------------------------------------------------------
  INSECURE_FILE_MODE: {
    status: 500,
    summary:
      'A key, credential or store file is open to group or others: set to 0600 with a warning when it is ours, refused when it cannot be.',
  },

  // --- agent values --------------------------------------------------------------------------
  VALUES_TOO_DEEP: {
    status: 400,
    summary: 'Agent values nest deeper than the limit (docs/LIMITS.md); the message names the path.',
  },
  VALUES_TOO_LARGE: {
    status: 400,
    summary: 'Agent values are over the byte limit as JSON (docs/LIMITS.md); the message names the path.',
  },

  // --- proxies and egress --------------------------------------------------------------------
  PROXY_FAILED: {
    status: 502,
    summary: 'An HTTP CONNECT proxy refused or dropped the tunnel; names proxy and target.',
  },
  TLS_REQUIRED: {
    status: 400,
    summary: 'A plain-HTTP request reached the TLS port; use https://.',
  },
  BAD_FRAMING: {
    status: 400,
    summary: 'Ambiguous or unsupported request body framing; the message names the header at fault.',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class TunnelError extends Error {
  readonly code: ErrorCode;
  override readonly name = 'TunnelError';

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  toJSON(): { error: { code: ErrorCode; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

export function isTunnelError(err: unknown, code?: ErrorCode): err is TunnelError {
  return err instanceof TunnelError && (code === undefined || err.code === code);
}

/** Throws WIRE_TRUNCATED unless `buf` holds at least `need` bytes. */
export function needBytes(buf: Uint8Array, need: number, what: string): void {
  if (buf.length < need) {
    throw new TunnelError('WIRE_TRUNCATED', `${what}: need ${need} bytes, have ${buf.length}`);
  }
}
