/** The start-up and shutdown constants of a relay process (either mode). */

/** Request bodies over this get 413 PAYLOAD_TOO_LARGE. */
export const BODY_LIMIT = 64 * 1024;
/**
 * A TLS handshake not finished after this long is cut (Node's default is 120 s): bytes that are not TLS can
 * look like the start of a long record and would otherwise hold the socket open, as would a slow client.
 */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/** close(): how long in-flight requests may take before their connections are cut. */
export const CLOSE_GRACE_MS = 10_000;
/**
 * drain(): the part of the grace kept for moving the agents and closing (Restarting frames, close handshakes),
 * at most half the grace: the wait for in-flight hub streams ends this long before the grace does.
 */
export const DRAIN_CLOSE_RESERVE_MS = 2_000;
/**
 * drain(): the port stays open, answering /readyz with 503, at least this long (within the grace), so a load
 * balancer that checks every second or faster sees the relay leave before its port closes.
 */
export const DRAIN_READINESS_MS = 1_000;
/**
 * drain(): after the agents moved, the relay keeps serving until no request other than a health check has
 * arrived for this long (the balancer stopped sending), at most until DRAIN_QUIET_RESERVE_MS before the grace ends.
 */
export const DRAIN_QUIET_MS = 1_000;
export const DRAIN_QUIET_RESERVE_MS = 500;
/**
 * Answers under these path prefixes (the API, the agent values YAML) get `Cache-Control: no-store`: many carry
 * secrets (access keys, kubeconfigs, PSKs, agent credentials, values), and no API answer is worth caching.
 */
export const NO_STORE_PREFIXES: readonly string[] = ['/api/', '/clusters/'];
/** Paths that do not count as traffic for the drain's quiet wait (probes and scrapes). */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);
/** Failed registrations: after 10 from one source within 5 minutes its further failures get 429 (valid credentials pass). */
export const REGISTER_FAILURES = { max: 10, windowMs: 5 * 60_000, maxEntries: 10_000 } as const;
