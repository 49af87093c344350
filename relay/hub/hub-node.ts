/**
 * The hub node: the relay's own WireGuard identity (100.64.0.1) as a user-space Device whose peers are
 * the accepted agents (their key, the per-pair preshared key, allowed IP = the agent's /32). It reaches
 * agents through the DERP server's in-process client (no socket): datagrams from the relay go straight
 * to device.receive() (transport data at once; handshake messages through the bounded handshake queue,
 * a batch per event-loop turn: handshake-queue.ts), datagrams to an agent go to the path its Endpoint
 * names (paths.ts).
 *
 * Peers are added for every accepted agent at start (addAgent) and on demand when an admitted key sends
 * its first datagram (lookup, e.g. a registration accepted after start); removeAgent on delete, deny or
 * unjoin. The hub answers ICMP echo to its address, probes each agent with ICMP echo for RTT, and every
 * statusIntervalMs reports per agent: connected, path, lastHandshake, rttMs, bytesIn/Out (onStatus).
 * Other inner packets go to onInnerPacket (pluggable: the streams layer puts its session on inner UDP).
 */
import { type Clock, realClock, type TimerHandle } from '../../shared/clock.js';
import { MAX_PACKET_LEN } from '../../shared/derp/frames.js';
import type { DerpClientLike } from '../../shared/derp/types.js';
import { EchoProber, echoReplyFor, isIcmpv4, tryParseIpv4 } from '../../shared/ip/echo-prober.js';
import { parseIpv4Address } from '../../shared/ip/index.js';
import { keyToBase64, parseKey } from '../../shared/keys.js';
import type { WireGuardTimers } from '../../shared/wireguard/constants.js';

/** Agents the hub holds sessions with by default: as many as the DERP server admits clients (maxClients). */
export const HUB_DEFAULT_MAX_PEERS = 10_000;

import { Device, type DeviceStats, type Peer } from '../../shared/wireguard/device.js';
import { HUB_ADDRESS } from '../addresses.js';
import type { AdmittedPeer, ConnectionStatus } from '../hooks.js';
import { type Defer, HandshakeQueue } from './handshake-queue.js';
import { type DerpEndpoint, derpEndpoint, PathTable } from './paths.js';

/** WireGuard transport overhead: 16-byte header + 16-byte tag. Relay frames carry up to 65,535 bytes. */
export const HUB_MTU = MAX_PACKET_LEN - 32;
/**
 * A queued handshake message that is a view into a larger buffer is copied when that buffer exceeds this
 * (DERP payloads are views into the socket chunk that carried them, up to 64 KiB, never reused; holding
 * the view would pin the whole chunk while the message waits).
 */
export const HANDSHAKE_VIEW_MAX_BACKING = 8_192;
/** Agents whose first datagrams wait for a store lookup at once; more are dropped. */
export const MAX_PENDING_LOOKUPS = 256;
/** Datagrams held per key while its lookup runs (a handshake initiation and a few retries). */
export const MAX_PENDING_PER_KEY = 4;
export const DEFAULT_STATUS_INTERVAL_MS = 2_000;
/** The hub pings each agent this often (RTT), once its session is up. */
export const DEFAULT_HUB_PROBE_INTERVAL_MS = 5_000;
/** No authenticated datagram from an agent for this long: not connected. */
export const DEFAULT_HUB_DEAD_AFTER_MS = 15_000;

/** The DERP server surface the hub needs. */
export interface HubDerp {
  connectLocal(
    keyPair: { publicKey: Buffer },
    handlers: {
      onPacket?: (src: Buffer, payload: Buffer) => void;
      onPeerGone?: (peer: Buffer, reason: number) => void;
    },
  ): DerpClientLike;
  isConnected(pubKey: Buffer): boolean;
}

export interface HubAgent {
  readonly cluster: string;
  readonly publicKey: string;
  readonly address: string;
  readonly peer: Peer;
}

export interface HubNodeOptions {
  privateKey: Buffer;
  derp: HubDerp;
  /** Whether a key may be a peer, and its parameters (the store: registered and Accepted). */
  lookup(publicKey: Buffer): Promise<AdmittedPeer | null>;
  onStatus?: (cluster: string, status: ConnectionStatus) => void;
  /** Inner packets that are not ICMP echo for the hub. `packet` is a view into the decrypted
   * datagram, which nothing reuses (see Device.receive). */
  onInnerPacket?: (packet: Buffer, agent: HubAgent) => void;
  clock?: Clock;
  maxPeers?: number;
  timers?: Partial<WireGuardTimers>;
  statusIntervalMs?: number;
  probeIntervalMs?: number;
  deadAfterMs?: number;
  log?: (obj: object, msg: string) => void;
  /** Schedules a turn of the handshake queue (default setImmediate). */
  defer?: Defer;
  /** Handshake messages processed per turn (default HANDSHAKE_BATCH). */
  handshakeBatch?: number;
  /** Handshake messages waiting at most (default HANDSHAKE_QUEUE_CAP). */
  handshakeQueueCap?: number;
}

export interface HubStats {
  device: DeviceStats;
  agents: number;
  pendingLookups: number;
  /** Handshake messages waiting for their turn now. */
  handshakeQueue: number;
  dropped: {
    lookupFull: number;
    notAdmitted: number;
    pendingOverflow: number;
    pathFailed: number;
    handshakeQueueFull: number;
    handshakeStale: number;
  };
}

interface QueuedHandshake {
  readonly d: Buffer;
  readonly e: DerpEndpoint;
  /** clock.now() when queued. */
  readonly at: number;
}

/** True for WireGuard handshake messages (initiation 1, response 2, cookie reply 3; type word LE). */
function isHandshakeMessage(d: Buffer): boolean {
  if (d.length < 4) return false;
  const t = d.readUInt32LE(0);
  return t >= 1 && t <= 3;
}

interface AgentRecord extends HubAgent {
  readonly key: Buffer;
  readonly endpoint: DerpEndpoint;
  readonly prober: EchoProber;
  lastRxBytes: number;
  lastRxAt: number | null;
  lastProbeAt: number;
}

const PATH_FAILED = new Error('path refused the datagram');

export class HubNode {
  readonly device: Device;
  readonly publicKey: Buffer;
  readonly #o: HubNodeOptions;
  readonly #clock: Clock;
  readonly #local: DerpClientLike;
  readonly #paths = new PathTable();
  readonly #agents = new Map<string, AgentRecord>();
  /** Per-packet fast paths without formatting keys: the relay passes each sender's own key Buffer. */
  readonly #bySrcBuffer = new WeakMap<Buffer, AgentRecord>();
  readonly #byPeer = new Map<Peer, AgentRecord>();
  readonly #byCluster = new Map<string, AgentRecord>();
  readonly #pending = new Map<string, Buffer[]>();
  readonly #hubAddr = parseIpv4Address(HUB_ADDRESS);
  readonly #dropped = {
    lookupFull: 0,
    notAdmitted: 0,
    pendingOverflow: 0,
    pathFailed: 0,
    handshakeQueueFull: 0,
    handshakeStale: 0,
  };
  readonly #handshakes: HandshakeQueue<QueuedHandshake>;
  readonly #statusMs: number;
  readonly #probeMs: number;
  readonly #deadMs: number;
  #timer: TimerHandle | undefined;
  #inner: ((packet: Buffer, agent: HubAgent) => void) | undefined;
  #closed = false;

  constructor(opts: HubNodeOptions) {
    this.#o = opts;
    this.#inner = opts.onInnerPacket;
    this.#clock = opts.clock ?? realClock;
    this.#statusMs = opts.statusIntervalMs ?? DEFAULT_STATUS_INTERVAL_MS;
    this.#probeMs = opts.probeIntervalMs ?? DEFAULT_HUB_PROBE_INTERVAL_MS;
    this.#deadMs = opts.deadAfterMs ?? DEFAULT_HUB_DEAD_AFTER_MS;
    this.#handshakes = new HandshakeQueue<QueuedHandshake>({
      handle: (q) => {
        // Waited a whole retry interval: the initiator has sent a new initiation (new ephemeral key)
        // and would drop the response to this one, so answering it only costs the hub.
        if (this.#clock.now() - q.at >= this.device.timers.rekeyTimeout) this.#dropped.handshakeStale++;
        else this.device.receive(q.d, q.e);
      },
      ...(opts.defer ? { defer: opts.defer } : {}),
      ...(opts.handshakeBatch !== undefined ? { batch: opts.handshakeBatch } : {}),
      ...(opts.handshakeQueueCap !== undefined ? { cap: opts.handshakeQueueCap } : {}),
    });
    this.device = new Device({
      privateKey: opts.privateKey,
      clock: this.#clock,
      mtu: HUB_MTU,
      maxPeers: opts.maxPeers ?? HUB_DEFAULT_MAX_PEERS,
      // Every datagram reaches the hub from a DERP key the relay admitted: no cookie round trips under load.
      authenticatedSources: true,
      ...(opts.timers ? { timers: opts.timers } : {}),
      send: (d, e) => {
        if (!this.#paths.send(d, e)) {
          this.#dropped.pathFailed++;
          throw PATH_FAILED;
        }
      },
      onPacket: (p, peer) => this.#onInner(p, peer),
    });
    this.publicKey = this.device.publicKey;
    this.#local = opts.derp.connectLocal(
      { publicKey: this.publicKey },
      {
        onPacket: (src, payload) => this.#fromDerp(src, payload),
        onPeerGone: (key) => {
          const a = this.#agents.get(key.toString('base64'));
          if (a) this.#report(a);
        },
      },
    );
    this.#paths.set('derp', {
      send: (d, e) => this.#local.send((e as DerpEndpoint).derpKey, d),
    });
    this.#armTick();
  }

  /** Replaces the handler for inner packets that are not the hub's own ICMP (the streams layer). */
  setInnerPacketHandler(fn: ((packet: Buffer, agent: HubAgent) => void) | undefined): void {
    this.#inner = fn;
  }

  /** Sets the transport for another endpoint scheme (e.g. `udp` for a direct path). */
  setPath(scheme: string, transport: { send(datagram: Buffer, endpoint: { key: string }): boolean }): void {
    this.#paths.set(scheme, transport);
  }

  /**
   * Adds (or refreshes) an accepted agent as a peer. False when the device is full or closed, or the
   * record is unusable (logged; never throws).
   */
  addAgent(p: AdmittedPeer): boolean {
    if (this.#closed) return false;
    let key: Buffer;
    let psk: Buffer;
    let dst: number;
    try {
      key = parseKey(p.publicKey, 'agent public key');
      psk = parseKey(p.presharedKey, 'preshared key');
      dst = parseIpv4Address(p.address);
    } catch (err) {
      this.#o.log?.({ cluster: p.cluster, err: (err as Error).message }, 'hub: agent record unusable');
      return false;
    }
    const existing = this.#agents.get(p.publicKey);
    if (existing?.address === p.address && existing.cluster === p.cluster) {
      if (psk.equals(existing.peer.presharedKey)) return true;
    }
    if (existing) this.removeAgent(p.publicKey);
    const endpoint = derpEndpoint(key);
    let peer: Peer;
    try {
      peer = this.device.addPeer({
        publicKey: key,
        presharedKey: psk,
        endpoint,
        allowedIps: [`${p.address}/32`],
      });
    } catch (err) {
      this.#o.log?.({ cluster: p.cluster, err: (err as Error).message }, 'hub: agent not added');
      return false;
    }
    const rec: AgentRecord = {
      cluster: p.cluster,
      publicKey: p.publicKey,
      address: p.address,
      peer,
      key,
      endpoint,
      prober: new EchoProber({ clock: this.#clock, src: this.#hubAddr, dst }),
      lastRxBytes: 0,
      lastRxAt: null,
      lastProbeAt: Number.NEGATIVE_INFINITY,
    };
    peer.on('handshake', () => {
      rec.lastRxAt = this.#clock.now();
      this.#report(rec);
    });
    this.#agents.set(p.publicKey, rec);
    this.#byPeer.set(peer, rec);
    this.#byCluster.set(p.cluster, rec);
    return true;
  }

  /** Removes the agent's peer (delete, deny, unjoin). Does not report a status (the caller decides). */
  removeAgent(publicKey: string | Buffer): boolean {
    const id = typeof publicKey === 'string' ? publicKey : keyToBase64(publicKey);
    this.#pending.delete(id);
    const rec = this.#agents.get(id);
    if (!rec) return false;
    this.#agents.delete(id);
    this.#byPeer.delete(rec.peer);
    if (this.#byCluster.get(rec.cluster) === rec) this.#byCluster.delete(rec.cluster);
    this.device.removePeer(rec.key);
    return true;
  }

  agent(publicKey: string): HubAgent | undefined {
    return this.#agents.get(publicKey);
  }

  /** The cluster's agent peer (its `peer` emits 'handshake' / 'session' when keys change). */
  agentForCluster(cluster: string): HubAgent | undefined {
    return this.#byCluster.get(cluster);
  }

  /** The live status of an agent's session, or null for an unknown key. */
  status(publicKey: string): ConnectionStatus | null {
    const rec = this.#agents.get(publicKey);
    return rec ? this.#statusOf(rec) : null;
  }

  /** Sends an inner IP packet (routed by destination address to its agent). */
  sendInner(packet: Buffer): void {
    this.device.send(packet);
  }

  /** True when the device holds maxPeers peers (addAgent refuses new agents). */
  get full(): boolean {
    return this.#agents.size >= (this.#o.maxPeers ?? HUB_DEFAULT_MAX_PEERS);
  }

  get stats(): HubStats {
    return {
      device: this.device.stats,
      agents: this.#agents.size,
      pendingLookups: this.#pending.size,
      handshakeQueue: this.#handshakes.depth,
      dropped: { ...this.#dropped },
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clock.clearTimer(this.#timer);
    this.#pending.clear();
    this.#handshakes.close();
    this.#local.close();
    this.device.close();
    this.#agents.clear();
    this.#byPeer.clear();
    this.#byCluster.clear();
  }

  // --- receive ----------------------------------------------------------------------------------

  /**
   * Transport data goes to the device at once; handshake messages wait in the handshake queue (at most
   * HANDSHAKE_BATCH per turn), so a burst of initiations does not hold the event loop in one callback.
   */
  #receive(d: Buffer, e: DerpEndpoint): void {
    if (!isHandshakeMessage(d)) {
      this.device.receive(d, e);
      return;
    }
    const held = d.buffer.byteLength > HANDSHAKE_VIEW_MAX_BACKING ? Buffer.from(d) : d;
    if (!this.#handshakes.push({ d: held, e, at: this.#clock.now() })) this.#dropped.handshakeQueueFull++;
  }

  #fromDerp(src: Buffer, payload: Buffer): void {
    const cached = this.#bySrcBuffer.get(src);
    if (cached && this.#byPeer.has(cached.peer)) {
      this.#receive(payload, cached.endpoint);
      return;
    }
    const id = src.toString('base64');
    const rec = this.#agents.get(id);
    if (rec) {
      this.#bySrcBuffer.set(src, rec);
      this.#receive(payload, rec.endpoint);
      return;
    }
    // First datagram from an admitted key the hub does not know yet: ask the store, hold a few.
    const held = this.#pending.get(id);
    if (held) {
      if (held.length >= MAX_PENDING_PER_KEY) this.#dropped.pendingOverflow++;
      else held.push(Buffer.from(payload));
      return;
    }
    if (this.#pending.size >= MAX_PENDING_LOOKUPS) return void this.#dropped.lookupFull++;
    this.#pending.set(id, [Buffer.from(payload)]);
    this.#o.lookup(Buffer.from(src)).then(
      (p) => this.#lookedUp(id, p),
      () => this.#lookedUp(id, null),
    );
  }

  #lookedUp(id: string, p: AdmittedPeer | null): void {
    const held = this.#pending.get(id);
    this.#pending.delete(id);
    if (this.#closed || !held) return;
    if (!p || p.publicKey !== id || !this.addAgent(p)) {
      this.#dropped.notAdmitted += held.length;
      return;
    }
    const rec = this.#agents.get(id);
    if (!rec) return;
    for (const d of held) this.#receive(d, rec.endpoint);
  }

  #onInner(packet: Buffer, peer: Peer): void {
    const rec = this.#byPeer.get(peer);
    if (!rec) return;
    const ip = isIcmpv4(packet) ? tryParseIpv4(packet) : null;
    if (ip && ip.dst === this.#hubAddr) {
      const reply = echoReplyFor(ip, this.#hubAddr);
      if (reply) return void peer.send(reply);
      if (rec.prober.onPacket(ip)) return;
    }
    this.#inner?.(packet, rec);
  }

  // --- status -----------------------------------------------------------------------------------

  #statusOf(rec: AgentRecord): ConnectionStatus {
    const now = this.#clock.now();
    const peer = rec.peer;
    if (peer.rxBytes !== rec.lastRxBytes) {
      rec.lastRxBytes = peer.rxBytes;
      rec.lastRxAt = now;
    }
    const connected =
      this.#o.derp.isConnected(rec.key) &&
      peer.lastHandshakeAt !== null &&
      rec.lastRxAt !== null &&
      now - rec.lastRxAt < this.#deadMs;
    return {
      connected,
      path: connected ? 'relayed' : 'none',
      lastHandshake: peer.lastHandshakeAt,
      rttMs: connected ? rec.prober.roundedRttMs : null,
      bytesIn: peer.rxBytes,
      bytesOut: peer.txBytes,
    };
  }

  #report(rec: AgentRecord): void {
    if (this.#closed) return;
    this.#o.onStatus?.(rec.cluster, this.#statusOf(rec));
  }

  #armTick(): void {
    this.#timer = this.#clock.setTimer(this.#statusMs, () => {
      if (this.#closed) return;
      const now = this.#clock.now();
      for (const rec of this.#agents.values()) {
        const s = this.#statusOf(rec);
        if (s.connected && rec.peer.isSessionUp && now - rec.lastProbeAt >= this.#probeMs) {
          rec.lastProbeAt = now;
          rec.peer.send(rec.prober.probe());
        }
        this.#o.onStatus?.(rec.cluster, s);
      }
      this.#armTick();
    });
  }
}
