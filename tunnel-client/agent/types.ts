/** Shapes the agent shares with the relay API (docs/API.md) and with its own state files. */

export type RegistrationStatus = 'Pending' | 'Accepted' | 'Denied';
export type PathKind = 'direct' | 'relayed' | 'none';

/** What the data plane needs, from the register and GET /api/v1/agent answers. */
export interface Tunnel {
  readonly hubPublicKey: string;
  readonly presharedKey: string;
  readonly address: string;
  readonly hubAddress: string;
  readonly relayUrl: string;
  readonly derpUrl: string;
  readonly udpEndpoint: string | null;
  /** The relay's STUN responder; absent in registrations from relays that did not send it. */
  readonly stunEndpoint?: string | null;
}

export interface RegisterRequest {
  readonly cluster: string;
  readonly publicKey: string;
  readonly agentVersion: string;
  readonly claims?: Record<string, string>;
}

export interface RegisterResponse {
  readonly cluster: string;
  readonly status: RegistrationStatus;
  readonly agentCredential: string;
  readonly tunnel: Tunnel | null;
}

export interface AgentInfo {
  readonly cluster: string;
  readonly status: RegistrationStatus;
  readonly tunnel: Tunnel | null;
  readonly valuesVersion?: string | null;
}

export interface LeaseResponse {
  readonly leaseDurationSeconds: number;
  readonly renewAfterSeconds: number;
  readonly valuesVersion: string;
  /** The relay takes `relayedReason` in the lease body; absent from relays that refuse it. */
  readonly takesRelayedReason?: boolean;
}

/** POST /api/v1/agent/lease's body. */
export interface LeaseRequest {
  readonly claims?: Record<string, string>;
  readonly agentVersion?: string;
  /** Why the agent's traffic is relayed, when only the agent can know (AGENT_REASONS); null: none. */
  readonly relayedReason?: string | null;
}

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
  readonly status: RegistrationStatus;
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
  readonly status: RegistrationStatus;
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
