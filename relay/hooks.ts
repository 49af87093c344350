/**
 * What the data plane (DERP server, hub node) needs from the control plane: events when a key
 * stops being allowed, an admission check for a public key, and a place to report each cluster's
 * live connection status, which the cluster object shows. Live status is kept in memory (it
 * describes this process's sessions); it is bounded by the number of clusters. In a fleet of replicas the
 * sessions other replicas hold are merged in (setRemoteConnections, from the store's agent locations). Keys taken away on
 * another relay replica sharing the store arrive as the same events (Store.onRemoteKeyLoss).
 */
import { EventEmitter } from 'node:events';
import type { ClusterRecord, Store } from './store/types.js';

export interface KeyEvent {
  cluster: string;
  /** Base64 WireGuard public key of the agent that lost access. */
  publicKey: string;
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
  /** A stored change of the cluster (created, accepted, denied, registered, lease, values, PSK, deleted). */
  'cluster-changed': [string];
  /**
   * The cluster's live status was reported (this process's session, or another replica's through the mesh); often
   * unchanged: the events feed compares.
   */
  'connection-reported': [string];
}

export interface ConnectionChange {
  cluster: string;
  connected: boolean;
  path: ConnectionStatus['path'];
}

/** The hub's path selector's view of a connected agent (shared/tunnel-endpoint/path-selector.ts). */
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

export interface AdmittedPeer {
  cluster: string;
  publicKey: string;
  /** 100.64.x.y */
  address: string;
  /** Base64 per-pair WireGuard preshared key. */
  presharedKey: string;
}

export class RelayHooks extends EventEmitter<RelayEvents> {
  readonly #store: Store;
  readonly #live = new Map<string, ConnectionStatus>();
  /** Sessions other replicas of a fleet hold (relay/mesh/), replaced as a whole on each refresh. */
  #remote: ReadonlyMap<string, ConnectionStatus> = new Map();

  constructor(store: Store) {
    super();
    this.#store = store;
    // A key another replica took away ends its sessions here too (cluster-deleted, -denied, agent-unjoined).
    store.onRemoteKeyLoss((e) => this.emit(e.kind, { cluster: e.cluster, publicKey: e.publicKey }));
  }

  /**
   * The peer if `publicKey` (base64, or 32 raw bytes as the DERP server passes it) is registered to a
   * cluster that is Accepted and has its address issued, else null.
   */
  async admittedPeer(key: string | Uint8Array): Promise<AdmittedPeer | null> {
    const publicKey =
      typeof key === 'string' ? key : key.length === 32 ? Buffer.from(key).toString('base64') : null;
    if (publicKey === null) return null;
    const c = await this.#store.findClusterByKey(publicKey);
    if (c === null || c.status !== 'Accepted' || c.address === null || c.presharedKey === null) return null;
    return { cluster: c.name, publicKey, address: c.address, presharedKey: c.presharedKey };
  }

  /** Every admitted peer (for the hub node's peer table at start; then follow the events). */
  async admittedPeers(): Promise<AdmittedPeer[]> {
    const out: AdmittedPeer[] = [];
    for (const c of await this.#store.listClusters()) {
      if (c.status === 'Accepted' && c.publicKey !== null && c.address !== null && c.presharedKey !== null) {
        out.push({
          cluster: c.name,
          publicKey: c.publicKey,
          address: c.address,
          presharedKey: c.presharedKey,
        });
      }
    }
    return out;
  }

  /** Emits peer-admitted if the record is an admitted peer. */
  announce(c: ClusterRecord): void {
    if (c.status === 'Accepted' && c.publicKey !== null && c.address !== null && c.presharedKey !== null) {
      this.emit('peer-admitted', {
        cluster: c.name,
        publicKey: c.publicKey,
        address: c.address,
        presharedKey: c.presharedKey,
      });
    }
  }

  /** Fits the DERP server's `admission.isAdmitted(pubKey: Buffer)`. */
  async isAdmitted(publicKey: string | Uint8Array): Promise<boolean> {
    return (await this.admittedPeer(publicKey)) !== null;
  }

  /** Merges `status` into the cluster's live status (by cluster name). */
  updateConnection(cluster: string, status: Partial<ConnectionStatus>): void {
    const prev = this.#live.get(cluster) ?? NO_CONNECTION;
    const next = { ...prev, ...status };
    this.#live.set(cluster, next);
    if (next.connected !== prev.connected || next.path !== prev.path) {
      this.emit('connection-changed', { cluster, connected: next.connected, path: next.path });
    }
    this.emit('connection-reported', cluster);
  }

  /** The sessions other replicas hold, by cluster (a fleet's mesh refreshes this about every second). */
  setRemoteConnections(remote: ReadonlyMap<string, ConnectionStatus>): void {
    const before = this.#remote;
    this.#remote = remote;
    for (const [cluster, s] of remote) {
      const was = before.get(cluster);
      if (was?.connected !== s.connected || was?.path !== s.path) this.emit('connection-reported', cluster);
    }
    for (const cluster of before.keys()) if (!remote.has(cluster)) this.emit('connection-reported', cluster);
  }

  /** Tells the events feed (relay/events/) that the cluster's stored record changed; call after the commit. */
  clusterChanged(cluster: string): void {
    this.emit('cluster-changed', cluster);
  }

  /** Same, addressed by the agent's public key; false if no cluster holds that key. */
  async updateConnectionByKey(publicKey: string, status: Partial<ConnectionStatus>): Promise<boolean> {
    const c = await this.#store.findClusterByKey(publicKey);
    if (!c) return false;
    this.updateConnection(c.name, status);
    return true;
  }

  /** This process's session of the cluster, else the one another replica of the fleet holds, else none. */
  connection(cluster: string): ConnectionStatus {
    const local = this.#live.get(cluster);
    if (local?.connected) return local;
    return this.#remote.get(cluster) ?? local ?? NO_CONNECTION;
  }

  /** Clusters with a live session right now. */
  get connectedCount(): number {
    let n = 0;
    for (const s of this.#live.values()) if (s.connected) n++;
    return n;
  }

  forget(cluster: string): void {
    const was = this.#live.get(cluster);
    this.#live.delete(cluster);
    if (was?.connected) this.emit('connection-changed', { cluster, connected: false, path: 'none' });
  }
}
