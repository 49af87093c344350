/**
 * The hub node: the relay's own WireGuard identity (100.64.0.1) as a tunnel endpoint
 * (shared/tunnel-endpoint: Device + path manager + stream binding, mux role 'client') whose peers are the
 * accepted agents (their key, the per-pair preshared key, allowed IP = the agent's /32). Each agent has a
 * relayed path through the DERP server's in-process client (no socket), and a direct path once a datagram
 * of its authenticated on the hub's UDP port (relay/data/udp/hub-udp.ts hands them to `endpoint.receiveFrom`).
 * This file composes the pieces:
 * - peer-directory.ts: the agents (by key, peer, cluster), the on-demand store lookup of a key the hub
 *   does not know yet, the cap;
 * - packet-intake.ts: datagrams from a known agent go to the endpoint (transport data at once,
 *   handshake messages through the bounded handshake queue, handshake-queue.ts);
 *   the directory and the queue are the endpoint's intake (shared/net/tunnel-endpoint/relay-intake.ts), which takes
 *   the relay's datagrams (`receiveRelayed`);
 * - hub-status.ts: per-agent status (onStatus) every statusIntervalMs, and the RTT probes;
 * - agent-runs.ts: a probe from a new run of an agent process reaches `onAgentRun` listeners before the hub
 *   answers it (the hub's streams replace that agent's stream session then).
 * Stream datagrams go to `endpoint.streams` (the proxies open streams there, relay/data/proxy/hub-streams.ts).
 * The hub's endpoint answers ICMP echo to its address and takes the replies to the status probes (its per-peer
 * liveness, shared/net/tunnel-endpoint/peer-liveness.ts); other inner packets go to onInnerPacket.
 */
import { type Clock, realClock } from '../../../shared/clock.js';
import type { DerpClientLike } from '../../../shared/net/derp/types.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import type { PeerPaths } from '../../../shared/net/tunnel-endpoint/peer-paths.js';
import { RelayedPath } from '../../../shared/net/tunnel-endpoint/relayed-path.js';
import {
  type EndpointStreamsOptions,
  TunnelEndpoint,
  type TunnelEndpointOptions,
} from '../../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import type { UdpTransport } from '../../../shared/net/tunnel-endpoint/udp-transport.js';
import type { WireGuardTimers } from '../../../shared/net/wireguard/constants.js';
import type { Device, DeviceStats, Peer } from '../../../shared/net/wireguard/device.js';
import type { AdmittedPeer } from '../../control/model/admission.js';
import type { ConnectionStatus } from '../../control/model/connection-status.js';
import { HUB_ADDRESS } from '../../control/store/addresses.js';
import { AgentRuns } from './agent-runs.js';
import { HubStatus, type HubStatusOptions } from './hub-status.js';
import { PacketIntake, type PacketIntakeOptions } from './packet-intake.js';
import { type HubAgent, PeerDirectory } from './peer-directory.js';
import { type FleetSessions, SessionOwner } from './session-owner.js';

export {
  DEFAULT_HUB_DEAD_AFTER_MS,
  DEFAULT_HUB_PROBE_INTERVAL_MS,
  DEFAULT_STATUS_INTERVAL_MS,
} from './hub-status.js';
export { HANDSHAKE_VIEW_MAX_BACKING } from './packet-intake.js';
export { type HubAgent, MAX_PENDING_LOOKUPS, MAX_PENDING_PER_KEY } from './peer-directory.js';

/** Agents the hub holds sessions with by default: as many as the DERP server admits clients (maxClients). */
export const HUB_DEFAULT_MAX_PEERS = 10_000;

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

export interface HubNodeOptions {
  privateKey: Buffer;
  derp: HubDerp;
  /** Whether a key may be a peer, and its parameters (the store: registered and Accepted). */
  lookup(publicKey: Buffer): Promise<AdmittedPeer | null>;
  /** Inner packets that are neither stream datagrams nor ICMP echo for the hub. `packet` is a view into
   * the decrypted datagram, which nothing reuses (see Device.receive). */
  onInnerPacket?: (packet: Buffer, agent: HubAgent) => void;
  /** Stream binding settings (caps, ARQ and mux tuning); one link per agent at most by default. */
  streams?: Omit<EndpointStreamsOptions, 'role' | 'accept' | 'onStream'>;
  clock?: Clock;
  /** The hub's UDP port (direct paths send through it); absent: relayed paths only. */
  udp?: Pick<UdpTransport, 'send' | 'dontFragment'>;
  /**
   * Disco with the agents (shared/net/tunnel-endpoint/disco-peers.ts): answers their probes over the relay and
   * the UDP port, and steers each agent that speaks it to its direct path while that answers.
   */
  disco?: TunnelEndpointOptions['disco'];
  maxPeers?: number;
  timers?: Partial<WireGuardTimers>;
  log?: (obj: object, msg: string) => void;
  /** Each agent's live status (hub-status.ts): where it goes and how often it is taken. */
  status?: HubStatusSettings;
  /** The handshake queue (packet-intake.ts): its turn scheduler (default setImmediate), batch and cap. */
  handshakes?: Pick<PacketIntakeOptions, 'defer' | 'batch' | 'cap'>;
  /**
   * This hub is one replica of a fleet (session-owner.ts): it answers an agent over UDP only while it holds the
   * agent's session, and an agent whose relay connection left it loses its direct path here at once. Absent: a
   * single relay, which answers every peer over UDP.
   */
  fleet?: FleetSessions;
}

export type HubStatusSettings = Pick<
  HubStatusOptions,
  'onStatus' | 'statusIntervalMs' | 'probeIntervalMs' | 'deadAfterMs'
>;

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
    handshakeQueueFull: number;
    handshakeStale: number;
  };
}

export class HubNode {
  readonly endpoint: TunnelEndpoint;
  readonly publicKey: Buffer;
  readonly #local: DerpClientLike;
  readonly #peers: PeerDirectory;
  readonly #intake: PacketIntake;
  readonly #status: HubStatus;
  readonly #hubAddr = parseIpv4Address(HUB_ADDRESS);
  readonly #inner: ((packet: Buffer, agent: HubAgent) => void) | undefined;
  readonly #runs = new AgentRuns();
  readonly #runListeners = new Set<(agent: HubAgent) => void>();
  readonly #owner: SessionOwner | undefined;
  #closed = false;

  constructor(opts: HubNodeOptions) {
    this.#inner = opts.onInnerPacket;
    const clock = opts.clock ?? realClock;
    const maxPeers = opts.maxPeers ?? HUB_DEFAULT_MAX_PEERS;
    this.#owner = opts.fleet
      ? new SessionOwner({
          fleet: opts.fleet,
          relayConnected: (k) => opts.derp.isConnected(k),
          speaksDisco: (k) => this.endpoint.disco?.peer(k)?.heard === true,
          clusterOf: (k) => this.#peers.get(k.toString('base64'))?.cluster,
        })
      : undefined;
    const owner = this.#owner;
    this.endpoint = new TunnelEndpoint({
      privateKey: opts.privateKey,
      address: this.#hubAddr,
      clock,
      maxPeers,
      // A relayed datagram comes from a DERP key the relay admitted: no cookie round trips under load for
      // those (UDP sources still need one: Device.receiveFrom).
      authenticatedSources: true,
      udp: opts.udp,
      answersUdp: owner ? (k) => owner.answers(k) : undefined,
      disco: opts.disco,
      timers: opts.timers,
      // One stream link per agent with streams in use: as many as the hub holds sessions.
      streams: { maxLinks: maxPeers, ...opts.streams, role: 'client' },
      // The endpoint answers ICMP echo to the hub and takes the replies to its probes (echo-answer.ts); a probe
      // from a new run of an agent reaches onAgentRun listeners before it is answered.
      onEcho: (e, peer) => {
        const rec = e.kind === 'request' ? this.#peers.forPeer(peer) : undefined;
        if (rec && this.#runs.noteProbe(rec, e.ip)) for (const l of this.#runListeners) l(rec);
      },
      onPacket: (p, peer) => this.#onInner(p, peer),
      // The relay's datagrams: the agent found in the peer directory (looked up in the store the first time), then
      // through the handshake queue (packet-intake.ts) to the device.
      intake: {
        peerOf: (src, d) => this.#peers.peerOf(src, d)?.paths,
        handshakes: { receive: (d, from) => this.#intake.receive(d, from) },
      },
    });
    this.publicKey = this.endpoint.publicKey;
    this.#intake = new PacketIntake({
      ...opts.handshakes,
      clock,
      deliver: this.endpoint.receive,
      staleAfterMs: () => this.endpoint.device.timers.rekeyTimeout,
    });
    this.#status = new HubStatus({
      ...opts.status,
      clock,
      isConnected: (k) => opts.derp.isConnected(k),
      agents: () => this.#peers.values(),
      pathOf: (key) => this.endpoint.disco?.snapshot(key),
    });
    this.#peers = new PeerDirectory({
      addPeer: (p) =>
        this.endpoint.addPeer({ ...p, paths: [new RelayedPath(this.#local, p.publicKey)], disco: true }),
      removePeer: (key) => this.endpoint.removePeer(key),
      clock,
      maxPeers,
      lookup: (k) => opts.lookup(k),
      deliver: (d, rec) => this.endpoint.admit(d, rec.paths),
      onHandshake: (rec) => this.#status.onHandshake(rec),
      log: opts.log,
    });
    this.#local = opts.derp.connectLocal(
      { publicKey: this.publicKey },
      {
        // Disco from an agent (the relay forwards it like any payload) to the disco side, WireGuard to the intake.
        onPacket: this.endpoint.receiveRelayed,
        onPeerGone: (key) => {
          const a = this.#peers.get(key.toString('base64'));
          // A replica of a fleet holds the agent's session no more: its direct path here ends with it.
          if (a && this.#owner) this.endpoint.disco?.forgetPaths(a.key);
          if (a) this.#status.relayGone(a);
        },
      },
    );
  }

  /** The hub's WireGuard device (its peers are the agents). */
  get device(): Device<PeerPaths> {
    return this.endpoint.device;
  }

  /**
   * Adds (or refreshes) an accepted agent as a peer. False when the device is full or closed, or the
   * record is unusable (logged; never throws).
   */
  addAgent(p: AdmittedPeer): boolean {
    if (this.#closed) return false;
    return this.#peers.add(p);
  }

  /** Removes the agent's peer (delete, deny, unjoin). Does not report a status (the caller decides). */
  removeAgent(publicKey: string | Buffer): boolean {
    return this.#peers.remove(publicKey);
  }

  agent(publicKey: string): HubAgent | undefined {
    return this.#peers.get(publicKey);
  }

  /** The cluster's agent peer (its `peer` emits 'handshake' / 'session' when keys change). */
  agentForCluster(cluster: string): HubAgent | undefined {
    return this.#peers.forCluster(cluster);
  }

  /**
   * Calls `listener` when an agent's probe shows a new run of its process (agent-runs.ts), before the hub answers
   * that probe. Returns the unsubscribe function.
   */
  onAgentRun(listener: (agent: HubAgent) => void): () => void {
    this.#runListeners.add(listener);
    return () => this.#runListeners.delete(listener);
  }

  /** The live status of an agent's session, or null for an unknown key. */
  status(publicKey: string): ConnectionStatus | null {
    const rec = this.#peers.get(publicKey);
    return rec ? this.#status.of(rec) : null;
  }

  /** How many agents are on each path now (their status: `none` while not connected). */
  pathCounts(): Record<ConnectionStatus['path'], number> {
    const out: Record<ConnectionStatus['path'], number> = { direct: 0, relayed: 0, none: 0 };
    for (const rec of this.#peers.values()) out[this.#status.of(rec).path]++;
    return out;
  }

  /** True when the device holds maxPeers peers (addAgent refuses new agents). */
  get full(): boolean {
    return this.#peers.full;
  }

  get stats(): HubStats {
    return {
      device: this.endpoint.stats,
      agents: this.#peers.size,
      pendingLookups: this.#peers.pendingLookups,
      handshakeQueue: this.#intake.depth,
      dropped: { ...this.#peers.dropped, ...this.#intake.dropped },
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#runListeners.clear();
    this.#status.close();
    this.#intake.close();
    this.#local.close();
    this.endpoint.close();
    this.#peers.close();
  }

  /** Inner packets other than streams and echo to the hub go to the handler. */
  #onInner(packet: Buffer, peer: Peer<PeerPaths>): void {
    const rec = this.#peers.forPeer(peer);
    if (rec) this.#inner?.(packet, rec);
  }
}
