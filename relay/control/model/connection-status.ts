/** A cluster's live connection status as the hub reports it and the cluster object shows it. */

/** The hub's path selector's view of a connected agent (shared/net/tunnel-endpoint/path-selector.ts). */
export interface ConnectionPathDetail {
  /** `host:port` of the agent's direct path while it is in use or being confirmed. */
  remote: string | null;
  rttDirectMs: number | null;
  rttRelayedMs: number | null;
  /** Wall-clock ms of the last change of path or direct remote. */
  lastSwitch: number | null;
  /** Why the agent is not on the direct path (RelayedReason), null while it is. */
  reason: string | null;
}

export interface ConnectionStatus {
  connected: boolean;
  path: 'direct' | 'relayed' | 'none';
  /** Wall-clock ms of the last WireGuard handshake. */
  lastHandshake: number | null;
  rttMs: number | null;
  bytesIn: number;
  bytesOut: number;
  /** While connected, for an agent that speaks disco; else null. */
  pathDetail?: ConnectionPathDetail | null;
}

export const NO_CONNECTION: ConnectionStatus = {
  connected: false,
  path: 'none',
  lastHandshake: null,
  rttMs: null,
  bytesIn: 0,
  bytesOut: 0,
  pathDetail: null,
};
