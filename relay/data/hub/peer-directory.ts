/**
 * The hub's agents: one record per accepted agent (its WireGuard peer on the hub's endpoint, its paths,
 * its probe state), found by key, by peer and by cluster (the set of a cluster's agent replicas). Agents are added for every accepted
 * agent at start (add) and on demand when an admitted key the hub does not know sends its first datagram:
 * the store is asked (lookup), a few datagrams wait for the answer (capped per key and in keys), then go
 * on to `deliver`. remove on delete, deny or unjoin. The cap on agents is the device's maxPeers.
 */
import type { Clock } from '../../../shared/clock.js';
import { keyToBase64, parseKey } from '../../../shared/keys.js';
import type { EchoProber } from '../../../shared/net/ip/echo-prober.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import type { PeerPaths } from '../../../shared/net/tunnel-endpoint/peer-paths.js';
import type { TunnelPeer } from '../../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import type { Peer } from '../../../shared/net/wireguard/device.js';
import type { AdmittedPeer } from '../../control/model/admission.js';

/** Agents whose first datagrams wait for a store lookup at once; more are dropped. */
export const MAX_PENDING_LOOKUPS = 256;
/** Datagrams held per key while its lookup runs (a handshake initiation and a few retries). */
export const MAX_PENDING_PER_KEY = 4;

export interface HubAgent {
  readonly cluster: string;
  readonly publicKey: string;
  readonly address: string;
  readonly peer: Peer<PeerPaths>;
}

export interface AgentRecord extends HubAgent {
  readonly key: Buffer;
  /** The agent's paths: the Endpoint its datagrams are received from (packet-intake.ts). */
  readonly paths: PeerPaths;
  readonly prober: EchoProber;
  lastRxBytes: number;
  lastRxAt: number | null;
  lastProbeAt: number;
}

export interface PeerDirectoryOptions {
  /** Adds the agent as a peer of the hub's endpoint, with its paths; throws when refused. */
  addPeer(p: { publicKey: Buffer; presharedKey: Buffer; address: string }): TunnelPeer;
  removePeer(publicKey: Buffer): boolean;
  clock: Clock;
  /** Agents held at most (the device's maxPeers). */
  maxPeers: number;
  /** Whether a key may be a peer, and its parameters (the store: registered and Accepted). */
  lookup(publicKey: Buffer): Promise<AdmittedPeer | null>;
  /** A datagram from a known agent (at once, or once its lookup admitted it). */
  deliver(datagram: Buffer, rec: AgentRecord): void;
  /** The agent's peer completed a handshake. */
  onHandshake(rec: AgentRecord): void;
  log?: (obj: object, msg: string) => void;
}

export class PeerDirectory {
  readonly #options: PeerDirectoryOptions;
  readonly #agents = new Map<string, AgentRecord>();
  /** Per-packet fast paths without formatting keys: the relay passes each sender's own key Buffer. */
  readonly #bySrcBuffer = new WeakMap<Buffer, AgentRecord>();
  readonly #byPeer = new Map<Peer<PeerPaths>, AgentRecord>();
  /** Each cluster's agents (a cluster of agent replicas has several), in the order they were added. */
  readonly #byCluster = new Map<string, Set<AgentRecord>>();
  readonly #pending = new Map<string, Buffer[]>();
  readonly dropped = { lookupFull: 0, notAdmitted: 0, pendingOverflow: 0 };
  #closed = false;

  constructor(opts: PeerDirectoryOptions) {
    this.#options = opts;
  }

  get size(): number {
    return this.#agents.size;
  }

  /** Keys whose lookup is running. */
  get pendingLookups(): number {
    return this.#pending.size;
  }

  /** True when maxPeers agents are held (add refuses new agents). */
  get full(): boolean {
    return this.#agents.size >= this.#options.maxPeers;
  }

  get(publicKey: string): AgentRecord | undefined {
    return this.#agents.get(publicKey);
  }

  /** The cluster's first agent (its only one unless it runs agent replicas). */
  forCluster(cluster: string): AgentRecord | undefined {
    for (const rec of this.#byCluster.get(cluster) ?? []) return rec;
    return undefined;
  }

  /** Every agent of the cluster the hub holds. */
  agentsOf(cluster: string): AgentRecord[] {
    return [...(this.#byCluster.get(cluster) ?? [])];
  }

  forPeer(peer: Peer<PeerPaths>): AgentRecord | undefined {
    return this.#byPeer.get(peer);
  }

  values(): IterableIterator<AgentRecord> {
    return this.#agents.values();
  }

  /**
   * Adds (or refreshes) an accepted agent as a peer. False when the device is full or closed, or the
   * record is unusable (logged; never throws).
   */
  add(p: AdmittedPeer): boolean {
    if (this.#closed) return false;
    let key: Buffer;
    let psk: Buffer;
    try {
      key = parseKey(p.publicKey, 'agent public key');
      psk = parseKey(p.presharedKey, 'preshared key');
      parseIpv4Address(p.address);
    } catch (err) {
      this.#options.log?.({ cluster: p.cluster, err }, 'hub: agent record unusable');
      return false;
    }
    const existing = this.#agents.get(p.publicKey);
    if (existing?.address === p.address && existing.cluster === p.cluster) {
      if (psk.equals(existing.peer.presharedKey)) return true;
    }
    if (existing) this.remove(p.publicKey);
    let added: TunnelPeer;
    try {
      added = this.#options.addPeer({ publicKey: key, presharedKey: psk, address: p.address });
    } catch (err) {
      this.#options.log?.({ cluster: p.cluster, err }, 'hub: agent not added');
      return false;
    }
    const rec: AgentRecord = {
      cluster: p.cluster,
      publicKey: p.publicKey,
      address: p.address,
      peer: added.peer,
      key,
      paths: added.paths,
      // The endpoint's per-peer liveness probes the agent and takes the replies (peer-liveness.ts).
      prober: added.liveness.prober,
      lastRxBytes: 0,
      lastRxAt: null,
      lastProbeAt: Number.NEGATIVE_INFINITY,
    };
    rec.peer.on('handshake', () => this.#options.onHandshake(rec));
    this.#agents.set(p.publicKey, rec);
    this.#byPeer.set(rec.peer, rec);
    const agents = this.#byCluster.get(p.cluster) ?? new Set<AgentRecord>();
    agents.add(rec);
    this.#byCluster.set(p.cluster, agents);
    return true;
  }

  /** Removes the agent's peer and forgets datagrams waiting for its lookup. */
  remove(publicKey: string | Buffer): boolean {
    const id = typeof publicKey === 'string' ? publicKey : keyToBase64(publicKey);
    this.#pending.delete(id);
    const rec = this.#agents.get(id);
    if (!rec) return false;
    this.#agents.delete(id);
    this.#byPeer.delete(rec.peer);
    const agents = this.#byCluster.get(rec.cluster);
    agents?.delete(rec);
    if (agents?.size === 0) this.#byCluster.delete(rec.cluster);
    this.#options.removePeer(rec.key);
    return true;
  }

  /**
   * The agent that DERP key `src` is, for a datagram (the hub endpoint's intake); undefined while the datagram is
   * held (a copy) for the store's answer about the key (then it goes to `deliver`), or dropped and counted when the
   * caps are reached.
   */
  peerOf(src: Buffer, payload: Buffer): AgentRecord | undefined {
    const cached = this.#bySrcBuffer.get(src);
    if (cached && this.#byPeer.has(cached.peer)) return cached;
    const id = src.toString('base64');
    const rec = this.#agents.get(id);
    if (rec) {
      this.#bySrcBuffer.set(src, rec);
      return rec;
    }
    this.#hold(id, src, payload);
    return undefined;
  }

  /** First datagram from an admitted key the hub does not know yet: ask the store, hold a few. */
  #hold(id: string, src: Buffer, payload: Buffer): void {
    const held = this.#pending.get(id);
    if (held) {
      if (held.length >= MAX_PENDING_PER_KEY) this.dropped.pendingOverflow++;
      else held.push(Buffer.from(payload));
      return;
    }
    if (this.#pending.size >= MAX_PENDING_LOOKUPS) return void this.dropped.lookupFull++;
    this.#pending.set(id, [Buffer.from(payload)]);
    this.#options.lookup(Buffer.from(src)).then(
      (p) => this.#lookedUp(id, p),
      () => this.#lookedUp(id, null),
    );
  }

  /** Forgets every agent record and waiting datagram (the device's peers go with the device). */
  close(): void {
    this.#closed = true;
    this.#pending.clear();
    this.#agents.clear();
    this.#byPeer.clear();
    this.#byCluster.clear();
  }

  #lookedUp(id: string, p: AdmittedPeer | null): void {
    const held = this.#pending.get(id);
    this.#pending.delete(id);
    if (this.#closed || !held) return;
    if (!p || p.publicKey !== id || !this.add(p)) {
      this.dropped.notAdmitted += held.length;
      return;
    }
    const rec = this.#agents.get(id);
    if (!rec) return;
    for (const d of held) this.#options.deliver(d, rec);
  }
}
