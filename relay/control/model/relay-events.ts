/**
 * The events the control plane emits to the data plane (DERP server, hub node), the events feed and the mesh
 * (RelayHooks is their emitter): keys that stop being allowed, peers admitted, stored and live changes of a
 * cluster. Keys taken away on another replica sharing the store arrive as the same events
 * (Store.onRemoteKeyLoss).
 */
import type { AdmittedPeer } from './admission.js';
import type { ConnectionStatus } from './connection-status.js';

export interface KeyEvent {
  cluster: string;
  /** Base64 WireGuard public key of the agent that lost access. */
  publicKey: string;
}

export interface ConnectionChange {
  cluster: string;
  connected: boolean;
  path: ConnectionStatus['path'];
}

/** One agent's session on this process came up, went down or changed path (the cluster's agents apart). */
export interface AgentConnectionChange extends ConnectionChange {
  /** Base64 WireGuard public key of the agent. */
  publicKey: string;
}

/** One agent's session on this process drains (its GoAway: it takes no new streams) or takes streams again. */
export interface AgentDrainChange extends KeyEvent {
  draining: boolean;
}

export interface RelayEvents {
  /** A key became admitted (PSK registration, or accept of a registered cluster): add it as a peer. */
  'peer-admitted': [AdmittedPeer];
  'cluster-deleted': [KeyEvent];
  'cluster-denied': [KeyEvent];
  /** Unjoin, or a re-registration of the cluster that replaced this key. */
  'agent-unjoined': [KeyEvent];
  /** This process's session of the cluster's agent came up, went down, or changed path. */
  'connection-changed': [ConnectionChange];
  /** This process's session of one agent of the cluster came up, went down, or changed path. */
  'agent-connection-changed': [AgentConnectionChange];
  /** This process's session of one agent began draining, or its next run is up (or the wait for it is over). */
  'agent-draining': [AgentDrainChange];
  /** An agent renewed its lease, reporting why it is relayed (null: it names no reason of its own). */
  'agent-reason': [{ cluster: string; reason: string | null }];
  /** A stored change of the cluster (created, accepted, denied, registered, lease, values, PSK, deleted). */
  'cluster-changed': [string];
  /**
   * The cluster's live status was reported (this process's session, or another replica's through the mesh); often
   * unchanged: the events feed compares.
   */
  'connection-reported': [string];
}
