/**
 * The agent's own shapes: its state and status files and the data plane's figures. What it exchanges with the relay
 * is in shared/api/ (Tunnel is re-exported for the data plane's files).
 */
import type { ClusterStatus } from '../../shared/api/cluster-status.js';
import type { Tunnel } from '../../shared/api/tunnel.js';

export type { Tunnel };
export type PathKind = 'direct' | 'relayed' | 'none';

/**
 * state.json (version 1). On disk it holds no secret: the private key, the credential and the tunnel's preshared key
 * have their own 0600 files (state-dir.ts writes `tunnel` without `presharedKey` and adds it back when reading).
 */
export interface AgentState {
  readonly version: 1;
  readonly relay: string;
  readonly cluster: string;
  readonly caPin: string | null;
  readonly caFile: string | null;
  readonly publicKey: string;
  readonly agentVersion: string;
  readonly upstream: string | null;
  readonly allow: readonly string[];
  readonly claims: Readonly<Record<string, string>>;
  /** Absolute paths of --values files, layered in this order over the relay's values. */
  readonly valuesFiles: readonly string[];
  readonly status: ClusterStatus;
  readonly tunnel: Tunnel | null;
  readonly registeredAt: string;
  /**
   * `--proxy URL` given to join (or run); it overrides HTTPS_PROXY/HTTP_PROXY. It may carry basic-auth
   * credentials, so like every state file this one is 0600 (shared/kit/proxy/proxy-config.ts).
   */
  readonly proxy?: string | null;
  /** Absolute path of `--proxy-ca-file` (PEM CA of an https:// proxy). */
  readonly proxyCaFile?: string | null;
  /** `--egress`: '443-only' (TCP to the relay only) or 'auto' (may also use UDP when offered). */
  readonly egress?: '443-only' | 'auto';
  /** `--stun-server`: `host:port` of STUN servers asked besides the relay's responder. */
  readonly stunServers?: readonly string[];
}

/** The direct path's details (the agent's path selector; shared/net/tunnel-endpoint/path-selector.ts). */
export interface PathDetail {
  /** `host:port` the direct path goes to while it is in use (or being confirmed). */
  readonly remote: string | null;
  readonly rttDirectMs: number | null;
  readonly rttRelayedMs: number | null;
  /** When the path last changed (ISO 8601). */
  readonly lastSwitch: string | null;
  /** Why the traffic is not direct (PathSnapshot.reason), null while it is. */
  readonly reason: string | null;
  /**
   * What STUN and the hub's pongs say of the agent's NAT: ok (one mapping), varies (a different mapping per
   * destination), no-answer (no STUN answer), unknown (no STUN server, or not asked yet).
   */
  readonly nat?: string;
  /**
   * The largest inner packet the path in use carries now: 1,420 on a direct path until its MTU search
   * confirms more (up to 64,920 over loopback), 65,503 relayed.
   */
  readonly mtu?: number | null;
}

/** Connection figures the data plane reports (all "not connected" until it exists). */
export interface ConnectionStats {
  readonly connected: boolean;
  readonly path: PathKind;
  /** Present when the data plane selects paths (disco). */
  readonly pathDetail?: PathDetail;
  readonly rttMs: number | null;
  readonly lastHandshake: string | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Why the relay connection is down (`CODE: message`), from the data plane at once; null while up. */
  readonly relayError?: string | null;
}

/** status.json, rewritten by the running agent on every change. */
export interface AgentStatusFile extends ConnectionStats {
  readonly pid: number;
  readonly updatedAt: string;
  readonly cluster: string;
  readonly status: ClusterStatus;
  readonly leaseRenewedAt: string | null;
  /** Consecutive failed lease (or status) calls; 0 after a success. */
  readonly failures: number;
  readonly lastError: string | null;
  /** Why the agent stopped for good (cluster denied or deleted), kept after the process exits; else null. */
  readonly stopped?: string | null;
  readonly valuesVersion: string | null;
  readonly values: Record<string, unknown>;
}

export const DISCONNECTED: ConnectionStats = {
  connected: false,
  path: 'none',
  rttMs: null,
  lastHandshake: null,
  bytesIn: 0,
  bytesOut: 0,
};
