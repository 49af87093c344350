/**
 * What the data plane (DERP server, hub node) needs from the control plane, in one object: the relay's event bus
 * (relay-events.ts), admission of a public key (admission.ts) and each cluster's live connection status
 * (live-connections.ts), which the cluster object shows.
 */
import { EventEmitter } from 'node:events';
import type { ClusterRecord, Store } from '../store/types.js';
import { Admission, type AdmittedPeer, admittedPeerOf } from './admission.js';
import type { ConnectionStatus } from './connection-status.js';
import { LiveConnections, type RemoteSessions } from './live-connections.js';
import type { RelayEvents } from './relay-events.js';

// The types the mesh and the path reports take from here.
export type { ConnectionStatus } from './connection-status.js';
export type { RemoteSessions } from './live-connections.js';
export type { AgentConnectionChange, AgentDrainChange, ConnectionChange } from './relay-events.js';

export class RelayHooks extends EventEmitter<RelayEvents> {
  readonly #store: Store;
  readonly #admission: Admission;
  readonly #live = new LiveConnections(this);

  constructor(store: Store) {
    super();
    this.#store = store;
    this.#admission = new Admission(store);
    // A key another replica took away ends its sessions here too (cluster-deleted, -denied, agent-unjoined).
    store.onRemoteKeyLoss((e) => this.emit(e.kind, { cluster: e.cluster, publicKey: e.publicKey }));
  }

  /** The peer if `key` (base64, or 32 raw bytes as the DERP server passes it) is admitted, else null. */
  admittedPeer(key: string | Uint8Array): Promise<AdmittedPeer | null> {
    return this.#admission.admittedPeer(key);
  }

  /** Every admitted peer (for the hub node's peer table at start; then follow the events). */
  admittedPeers(): Promise<AdmittedPeer[]> {
    return this.#admission.admittedPeers();
  }

  /** Fits the DERP server's `admission.isAdmitted(pubKey: Buffer)`. */
  async isAdmitted(publicKey: string | Uint8Array): Promise<boolean> {
    return (await this.#admission.admittedPeer(publicKey)) !== null;
  }

  /** Emits peer-admitted if the record is an admitted peer. */
  announce(c: ClusterRecord): void {
    const peer = admittedPeerOf(c);
    if (peer !== null) this.emit('peer-admitted', peer);
  }

  /** Tells the events feed (relay/control/events/) that the cluster's stored record changed; call after the commit. */
  clusterChanged(cluster: string): void {
    this.emit('cluster-changed', cluster);
  }

  /** Merges `status` into the cluster's live status (by cluster name), as agent `publicKey`'s when given. */
  updateConnection(cluster: string, status: Partial<ConnectionStatus>, publicKey?: string): void {
    this.#live.update(cluster, status, publicKey);
  }

  /** This process's own status of the cluster (its agents' together), whatever other replicas of a fleet hold. */
  localConnection(cluster: string): ConnectionStatus {
    return this.#live.local(cluster);
  }

  /** The live status of each agent of the cluster, by key: this process's session, else another replica's. */
  agentConnections(cluster: string): ReadonlyMap<string, ConnectionStatus> {
    return this.#live.agents(cluster);
  }

  /** Forgets one agent's live status (unjoined, its cluster's other agents stay). */
  forgetAgent(cluster: string, publicKey: string): void {
    this.#live.forgetAgent(cluster, publicKey);
  }

  /** Same, addressed by the agent's public key; false if no cluster holds that key. */
  async updateConnectionByKey(publicKey: string, status: Partial<ConnectionStatus>): Promise<boolean> {
    const c = await this.#store.findClusterByKey(publicKey);
    if (!c) return false;
    this.#live.update(c.name, status, publicKey);
    return true;
  }

  /** The sessions other replicas hold, by cluster and agent (a fleet's mesh refreshes this about every second). */
  setRemoteConnections(remote: RemoteSessions): void {
    this.#live.setRemote(remote);
  }

  /** This process's session of the cluster, else the one another replica of the fleet holds, else none. */
  connection(cluster: string): ConnectionStatus {
    return this.#live.get(cluster);
  }

  /** Another replica of the fleet holds a session of one of the cluster's agents (false without a fleet). */
  heldElsewhere(cluster: string): boolean {
    return this.#live.heldElsewhere(cluster);
  }

  /** Clusters with a live session right now. */
  get connectedCount(): number {
    return this.#live.connectedCount;
  }

  forget(cluster: string): void {
    this.#live.forget(cluster);
  }
}
