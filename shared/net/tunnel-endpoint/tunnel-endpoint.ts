/**
 * One tunnel endpoint: the WireGuard device, the path manager (the paths to each peer) and the stream
 * binding (ARQ + mux on inner UDP), wired here and nowhere else. The hub node (relay/data/hub/hub-node.ts)
 * and the agent session (tunnel-client/session/agent-session.ts) each own one.
 *
 * Seams, top to bottom (docs/ARCHITECTURE.md has the drawing):
 * - streams -> `send(innerPacket): boolean` -> device (routes by destination address to a peer, seals)
 *   -> the peer's PeerPaths -> its current Path `send(datagram): boolean`. A dropped packet is `false`
 *   at every step, never an exception.
 * - the relay's datagrams come to `receiveRelayed(src, datagram)`: disco to `receiveDisco`, WireGuard through the
 *   owner's intake (relay-intake.ts: its peer directory and handshake queue) to `receive`;
 * - a path's owner hands each datagram from a peer to `receive(datagram, peerPaths)` -> device (opens)
 *   -> stream datagrams to the binding; every other inner packet (ICMP, anything else) to `onPacket`.
 * - a UDP transport (udp-transport.ts) listens through `listenUdp` (udp-edge.ts: STUN answers to its candidate
 *   source in endpoint-candidates.ts, which gathers what disco advertises; disco to `receiveDisco`) and hands each
 *   WireGuard datagram to `receiveFrom(datagram, from)`:
 *   the device finds the peer from the datagram, and only once it authenticates (a valid handshake
 *   message, or transport data that opens and passes the replay window) does the peer's direct path
 *   (direct-path.ts) follow `from` (WireGuard roaming). Garbage, replays and spoofed sources never move it.
 *
 * Sizes: each layer declares its own. A path declares its MTU and the room it frames a datagram in
 * (path.ts); WireGuard its transport header, padding and tag (transport.ts); the streams their inner
 * IPv4/UDP header (inner-udp.ts). roomFor() composes path + WireGuard for a peer, and the stream link adds
 * its own, so that every layer writes its header in place in the one buffer the ARQ allocates. A direct
 * path's MTU is searched (pmtu-probes.ts: DPLPMTUD, padded disco probes) while a disco peer's route uses it;
 * whenever the MTU of a peer's current path changes (path switch or search), its stream link follows
 * (StreamBinding.setPath: the ARQ sizes new segments to it and splits those in flight if it shrank, and
 * acknowledges by the path's kind: tunnel-streams/constants.ts).
 */
import type { Clock } from '../../clock.js';
import { keyToBase64 } from '../../keys.js';
import type { PacketRoom } from '../buffers/packet-room.js';
import type { Received } from '../buffers/received.js';
import type { DiscoAddress } from '../disco/disco-codec.js';
import { isDiscoMessage } from '../disco/disco-codec.js';
import { isIcmpv4 } from '../ip/echo-prober.js';
import { parseIpv4Address } from '../ip/index.js';
import { StreamBinding, type StreamBindingOptions } from '../tunnel-streams/stream-binding.js';
import type { WireGuardTimers } from '../wireguard/constants.js';
import {
  type AuthenticatedMessage,
  type DatagramSource,
  Device,
  type DeviceStats,
  type Peer,
  type ReceiveDrop,
} from '../wireguard/device.js';
import { TRANSPORT_OVERHEAD, transportRoom } from '../wireguard/transport.js';
import { DEFAULT_DIRECT_MTU, DirectPath } from './direct-path.js';
import { DiscoPeers, type DiscoPeersOptions, type DiscoSource } from './disco-peers.js';
import { answerEcho, type EchoEvent } from './echo-answer.js';
import { EndpointCandidates, type UdpCandidatesOptions } from './endpoint-candidates.js';
import type { LivenessPace } from './liveness.js';
import { MAX_PATH_MTU, type Path } from './path.js';
import { PathManager } from './path-manager.js';
import type { Route } from './path-selector.js';
import { PeerLiveness } from './peer-liveness.js';
import type { PeerPaths } from './peer-paths.js';
import { PmtuProbes, type PmtuProbesOptions } from './pmtu-probes.js';
import type { EndpointIntake } from './relay-intake.js';
import { type UdpEdgeOptions, udpEdgeReceiver } from './udp-edge.js';
import type { UdpTransport } from './udp-transport.js';

/** Largest inner packet on any path: the device's MTU (a peer's own is its path's, see roomFor). */
export const ENDPOINT_INNER_MTU = MAX_PATH_MTU - TRANSPORT_OVERHEAD;
const NO_PATH: PacketRoom = { mtu: MAX_PATH_MTU, headroom: 0, tailroom: 0 };

/** The stream binding's settings an endpoint's owner chooses (the rest is wired here). */
export type EndpointStreamsOptions = Pick<StreamBindingOptions, 'role'> &
  Partial<Pick<StreamBindingOptions, 'accept' | 'onStream' | 'maxLinks' | 'arq' | 'mux' | 'defer'>>;

export interface TunnelEndpointOptions {
  privateKey: Uint8Array;
  /** This endpoint's tunnel address (u32). */
  address: number;
  clock: Clock;
  maxPeers?: number;
  timers?: Partial<WireGuardTimers>;
  /** See DeviceOptions.authenticatedSources (true when every path authenticates its sources). */
  authenticatedSources?: boolean;
  streams: EndpointStreamsOptions;
  /** The UDP transport whose datagrams the owner hands to receiveFrom (direct paths send through it). */
  udp?: Pick<UdpTransport, 'send' | 'dontFragment'>;
  /** Largest datagram on a direct path (default DEFAULT_DIRECT_MTU). */
  directMtu?: number;
  /**
   * Whether the endpoint answers a peer over UDP now (absent: every peer). A WireGuard or disco datagram over
   * UDP of any other peer is dropped as `not-owner` before it is answered or moves a path (the device's and
   * disco's drop counts): a relay replica answers only the agents whose session it holds.
   */
  answersUdp?(peer: Buffer): boolean;
  /**
   * Path selection by disco (disco-peers.ts) for peers added with `disco: true`: pings over their relayed
   * path and the UDP transport, their route from their selector. Absent: no disco (paths by arrival).
   */
  disco?: Pick<
    DiscoPeersOptions,
    'conditions' | 'timers' | 'callMeMaybeMinMs' | 'callMeMaybeRefreshMs' | 'onObserved' | 'limits'
  >;
  /**
   * The path MTU search of disco peers' direct paths (on with `disco` and `udp`): its timers, steps and
   * first-hop lookup; false turns it off (direct paths stay at directMtu).
   */
  pmtu?: Pick<PmtuProbesOptions, 'timers' | 'steps' | 'firstHopMtu'> | false;
  /**
   * Each peer's liveness probes' pace (peer-liveness.ts; default DEFAULT_LIVENESS_PACE). The endpoint answers ICMP
   * echo to its address and takes the replies to its probes (echo-answer.ts).
   */
  liveness?: Partial<LivenessPace>;
  /** How datagrams over the relay find their peer and wait their turn (relay-intake.ts). */
  intake?: EndpointIntake;
  /** An echo request from a peer (before the endpoint answers it) or a reply to one of its probes. */
  onEcho?(event: EchoEvent, peer: Peer<PeerPaths>): void;
  /**
   * Inner packets that are not stream datagrams nor echo to the endpoint (ICMP, other UDP). `packet` is a view into the
   * decrypted datagram, the receiver's to keep (the receive rule, shared/net/buffers/received.ts).
   */
  onPacket(packet: Buffer, peer: Peer<PeerPaths>): void;
}

/** A UDP transport the endpoint listens on (its address and port for its candidates). */
export type ListenableUdp = Pick<UdpTransport, 'listen' | 'send' | 'address' | 'port'>;

export interface UdpListenOptions extends Pick<UdpEdgeOptions, 'onOutcome'> {
  /** Gather and advertise this transport's candidates (needs the endpoint's `disco`). */
  candidates?: UdpCandidatesOptions;
}

/** A transport the endpoint listens on: stop() ends its candidates (the transport's owner re-listens it). */
export interface UdpListening {
  stop(): void;
}

export interface TunnelPeerConfig {
  publicKey: Buffer;
  presharedKey: Uint8Array | string;
  /** The peer's tunnel address (IPv4, its /32 is its AllowedIPs). */
  address: string;
  /** Its paths now (more may be added to its PeerPaths later). */
  paths?: readonly Path[];
  /**
   * The peer may speak disco (needs the endpoint's `disco` option): once a disco message from it is accepted,
   * its route follows its path selector; until then (and for a stock WireGuard peer, for good) its path is the
   * one its latest authenticated datagram arrived on.
   */
  disco?: boolean;
}

export interface TunnelPeer {
  readonly peer: Peer<PeerPaths>;
  readonly paths: PeerPaths;
  /** Its echo probes and whether it answers them (peer-liveness.ts). */
  readonly liveness: PeerLiveness;
}

/** The liveness pace by default: probes every 2 s under traffic, 25 s idle; dead after 6 s unanswered. */
export const DEFAULT_LIVENESS_PACE: LivenessPace = { probeMs: 2_000, idleProbeMs: 25_000, deadMs: 6_000 };

/** What the direct paths of an endpoint did. */
export interface DirectStats {
  /** Direct paths opened (a peer's first authenticated datagram over UDP). */
  opened: number;
  /** A direct path moved to a new address (roaming). */
  roamed: number;
  /** The direct remote stopped being trusted because a peer's streams heard nothing back (their ARQ's 'silent'). */
  silences: number;
  /** ... because the peer's transport datagrams came over the relay while the direct path was quiet. */
  relayedWhileDirect: number;
}

/**
 * A transport datagram over the relay while the route is `direct` and nothing authenticated on the direct path for
 * this long: the peer no longer hears (or uses) the direct path. Datagrams a peer copies to both paths while it
 * confirms its remote arrive on the direct path too, well within this.
 */
export const DIRECT_QUIET_MS = 50;

export class TunnelEndpoint {
  readonly device: Device<PeerPaths>;
  readonly paths: PathManager;
  readonly streams: StreamBinding;
  readonly direct: DirectStats = { opened: 0, roamed: 0, silences: 0, relayedWhileDirect: 0 };
  readonly #clock: Clock;
  /** Disco and path selection (the endpoint's `disco` option), else undefined. */
  readonly disco: DiscoPeers | undefined;
  /** The direct paths' MTU search (with disco and a UDP transport, unless `pmtu: false`). */
  readonly pmtu: PmtuProbes | undefined;
  /** The candidates disco advertises, gathered per listening UDP transport (with disco), else undefined. */
  readonly candidates: EndpointCandidates | undefined;
  readonly #onPacket: (packet: Buffer, peer: Peer<PeerPaths>) => void;
  readonly #onEcho: TunnelEndpointOptions['onEcho'];
  readonly #intake: EndpointIntake | undefined;
  readonly #address: number;
  readonly #pace: LivenessPace;
  readonly #liveness = new WeakMap<Peer<PeerPaths>, PeerLiveness>();
  readonly #udp: Pick<UdpTransport, 'send' | 'dontFragment'> | undefined;
  readonly #directMtu: number | undefined;
  /** The transports listened on (listenUdp), and the one the datagram in receiveFrom now came through. */
  readonly #listened = new Set<Pick<UdpTransport, 'send'>>();
  #arrival: Pick<UdpTransport, 'send'> | undefined;

  /** Throws BAD_CONFIG for bad device settings (mtu, maxPeers, timers), KEY_INVALID for a bad key. */
  constructor(o: TunnelEndpointOptions) {
    this.#clock = o.clock;
    this.#onPacket = o.onPacket;
    this.#onEcho = o.onEcho;
    this.#intake = o.intake;
    this.#address = o.address;
    this.#pace = { ...DEFAULT_LIVENESS_PACE, ...o.liveness };
    this.#udp = o.udp;
    this.#directMtu = o.directMtu;
    this.device = new Device<PeerPaths>({
      privateKey: o.privateKey,
      clock: o.clock,
      mtu: ENDPOINT_INNER_MTU,
      maxPeers: o.maxPeers,
      timers: o.timers,
      authenticatedSources: o.authenticatedSources,
      onPacket: (p, peer) => this.#deliver(p, peer),
      answersUdp: o.answersUdp ? (peer) => o.answersUdp?.(peer.publicKey) !== false : undefined,
      sendToSource: (d, to) => (this.#arrival ?? this.#udp)?.send(d, to.address, to.port) ?? false,
    });
    this.paths = new PathManager({
      onPathChange: (p) => this.#streamPathChanged(p),
      onAuthenticated: (paths, source, message) => this.#authenticated(paths, source, message),
    });
    const udp = o.udp;
    this.disco = o.disco
      ? new DiscoPeers({
          ...o.disco,
          clock: o.clock,
          privateKey: o.privateKey,
          sendRelay: (peer, d) => this.paths.get(keyToBase64(peer))?.get('relayed')?.send(d) === true,
          sendUdp: udp
            ? (d: Buffer, host: string, port: number) => (this.#arrival ?? udp).send(d, host, port)
            : undefined,
          onRouteChange: (peer, route, remote) => this.#routeChanged(peer, route, remote),
          onHeard: (peer) => this.#heard(peer),
          onProbeAck: (peer, txid, size) => this.pmtu?.ack(peer, txid, size) ?? false,
          maxPeers: o.maxPeers,
          answersUdp: o.answersUdp ? (peer: Buffer) => o.answersUdp?.(peer) !== false : undefined,
        })
      : undefined;
    const disco = this.disco;
    this.candidates = disco ? new EndpointCandidates({ clock: o.clock, sink: disco }) : undefined;
    this.pmtu =
      disco && udp && o.pmtu !== false
        ? new PmtuProbes({
            ...o.pmtu,
            clock: o.clock,
            base: o.directMtu ?? DEFAULT_DIRECT_MTU,
            sendProbe: (peer, to, probe) => disco.sendProbe(peer, to, probe),
            dontFragment: () => udp.dontFragment,
            onMtuChange: (peer) => this.#mtuChanged(peer),
          })
        : undefined;
    this.streams = new StreamBinding({
      ...o.streams,
      local: o.address,
      clock: o.clock,
      send: (p) => this.#sendApp(p),
      roomFor: (remote) => this.roomFor(remote),
      kindFor: (remote) => this.paths.forAddress(remote)?.path?.kind ?? 'relayed',
      onSilent: (remote) => this.#streamsSilent(remote),
    });
  }

  get publicKey(): Buffer {
    return this.device.publicKey;
  }

  get stats(): DeviceStats {
    return this.device.stats;
  }

  /**
   * Adds a peer with its paths. Throws as Device.addPeer does (WG_PEER_LIMIT, CONFLICT, KEY_INVALID,
   * BAD_INPUT) and BAD_INPUT for a bad address.
   */
  addPeer(cfg: TunnelPeerConfig): TunnelPeer {
    const address = parseIpv4Address(cfg.address);
    const paths = this.paths.create(cfg.publicKey, address);
    const peer = this.device.addPeer({
      publicKey: cfg.publicKey,
      presharedKey: cfg.presharedKey,
      endpoint: paths,
      allowedIps: [`${cfg.address}/32`],
    });
    paths.peer = peer;
    this.paths.hold(paths);
    for (const p of cfg.paths ?? []) paths.add(p);
    // Its selector hears of its traffic at once (its pacing), and steers it once it speaks disco.
    const selector = cfg.disco ? this.disco?.addPeer(cfg.publicKey) : undefined;
    if (selector) paths.track(selector);
    const liveness = new PeerLiveness({
      clock: this.#clock,
      src: this.#address,
      dst: address,
      pace: this.#pace,
      send: (p) => peer.send(p),
    });
    this.#liveness.set(peer, liveness);
    return { peer, paths, liveness };
  }

  removePeer(publicKey: Buffer): boolean {
    this.pmtu?.stop(publicKey);
    this.disco?.removePeer(publicKey);
    this.paths.remove(publicKey);
    return this.device.removePeer(publicKey);
  }

  /**
   * Takes `transport`'s datagrams from now on, told apart by the UDP edge (udp-edge.ts): STUN answers to the
   * transport's candidate source, disco to receiveDisco, the rest to receiveFrom; `o.onOutcome` is told what became
   * of each. With `o.candidates` (and disco) the transport's candidates are gathered (endpoint-candidates.ts) and
   * advertised with the other transports' until the returned listening is stopped.
   */
  listenUdp(transport: ListenableUdp, o: UdpListenOptions = {}): UdpListening {
    const source = o.candidates ? this.candidates?.add(transport, o.candidates) : undefined;
    this.#listened.add(transport);
    transport.listen(udpEdgeReceiver(this, { stun: source?.stun, onOutcome: o.onOutcome, via: transport }));
    return {
      stop: () => {
        this.#listened.delete(transport);
        source?.stop();
      },
    };
  }

  /**
   * A disco message (isDiscoMessage) from the relay or a UDP transport, `via` the one it came through (absent: the
   * endpoint's `udp`): its answers (pong, probe ack) and the pings it sets off go back through that transport.
   * Never throws.
   */
  receiveDisco(datagram: Buffer, from: DiscoSource, via?: Pick<UdpTransport, 'send'>): void {
    this.#arrival = via;
    try {
      this.disco?.receive(datagram, from);
    } finally {
      this.#arrival = undefined;
    }
  }

  /**
   * A datagram over the relay from relay key `src`: disco to receiveDisco, WireGuard through the owner's intake
   * (relay-intake.ts) to receive. Never throws. A bound function: a relay client may hold it as its handler.
   */
  readonly receiveRelayed = (src: Buffer, datagram: Buffer): void => {
    if (isDiscoMessage(datagram)) {
      this.receiveDisco(datagram, { via: 'relay', key: src });
      return;
    }
    const paths = this.#intake ? this.#intake.peerOf(src, datagram) : this.paths.get(keyToBase64(src));
    if (paths) this.admit(datagram, paths);
  };

  /** A WireGuard datagram over the relay whose peer is known: through the intake's handshake queue to receive. */
  admit(datagram: Buffer, from: PeerPaths): void {
    const handshakes = this.#intake?.handshakes;
    if (handshakes) handshakes.receive(datagram, from);
    else this.receive(datagram, from);
  }

  /** Sends an inner IP packet, routed by its destination address; false when it was dropped. */
  send(packet: Buffer): boolean {
    return this.#sendApp(packet);
  }

  /**
   * A datagram that arrived from the peer of `from` on its relayed path. Returns why it was dropped, or
   * null once it authenticated. Never throws. A bound function: a transport may hold it as its handler.
   */
  readonly receive = (datagram: Received, from: PeerPaths): ReceiveDrop | null => {
    const length = datagram.length;
    const drop = this.device.receive(datagram, from);
    if (drop === null) this.paths.bytes.relayed.in += length;
    return drop;
  };

  /**
   * A WireGuard datagram from UDP address `from` (see the top of this file), through transport `via` (absent: the
   * endpoint's `udp`): the answers to it and the peer's direct path go back through that transport. Returns why it
   * was dropped, or null once it authenticated. Never throws.
   */
  receiveFrom(
    datagram: Received,
    from: DatagramSource,
    via?: Pick<UdpTransport, 'send'>,
  ): ReceiveDrop | null {
    const length = datagram.length;
    this.#arrival = via;
    const drop = this.device.receiveFrom(datagram, from);
    this.#arrival = undefined;
    if (drop === null) this.paths.bytes.direct.in += length;
    return drop;
  }

  /**
   * What a peer's inner packets may be: WireGuard's room (transport.ts) over the peer's current path
   * (over a path-less datagram of MAX_PATH_MTU while it has none).
   */
  roomFor(remote: number): PacketRoom {
    return transportRoom(this.paths.forAddress(remote)?.path ?? NO_PATH);
  }

  /** Ends every stream session, then the device (its peers' timers stop). */
  close(): void {
    this.candidates?.close();
    this.pmtu?.close();
    this.disco?.close();
    this.streams.close();
    this.device.close();
  }

  /** The peer speaks disco (a message from it was accepted): its selector steers its paths from now on. */
  #heard(key: Buffer): void {
    const paths = this.paths.get(keyToBase64(key));
    const steering = this.disco?.peer(key);
    if (paths && steering) paths.steer(steering);
  }

  /** A steered peer's route changed: its direct path goes to the confirmed remote, then it reselects. */
  #routeChanged(key: Buffer, route: Route, remote: DiscoAddress | undefined): void {
    const paths = this.paths.get(keyToBase64(key));
    if (!paths) return;
    if (route !== 'relayed' && remote) this.#directTo(paths, { address: remote.host, port: remote.port });
    const direct = paths.get('direct');
    if (route !== 'relayed' && direct instanceof DirectPath) this.pmtu?.start(key, direct);
    else this.pmtu?.stop(key);
    paths.reselect();
  }

  /**
   * The streams to a peer sent data and heard nothing back for half a retransmission timeout: while its route is
   * `direct` the remote is no longer trusted, so the resends (and everything after) go over the relay too until
   * the remote answers a ping again (PathSelector.distrustRemote), instead of waiting for the trust window.
   */
  #streamsSilent(remote: number): void {
    const paths = this.paths.forAddress(remote);
    if (paths?.path?.kind !== 'direct') return;
    this.direct.silences++;
    this.disco?.distrustRemote(paths.publicKey);
  }

  /** A direct path's MTU changed: the peer's stream link follows while that path is its current one. */
  #mtuChanged(key: Buffer): void {
    const paths = this.paths.get(keyToBase64(key));
    if (paths?.path?.kind === 'direct') this.#streamPathChanged(paths);
  }

  /** The peer's stream link follows its current path: that path's MTU and kind (its ACK policy). */
  #streamPathChanged(paths: PeerPaths): void {
    const kind = paths.path?.kind ?? 'relayed';
    this.streams.setPath(paths.address, { kind, mtu: this.roomFor(paths.address).mtu });
  }

  /**
   * The peer's direct path, made or moved to `to` (nothing without a UDP transport): through the transport the
   * datagram came on; a path on another listened transport moves to this one (a second UDP port of the endpoint).
   */
  #directTo(paths: PeerPaths, to: DatagramSource): void {
    const via = this.#arrival ?? this.#udp;
    if (!via) return;
    const direct = paths.get('direct');
    const current = direct instanceof DirectPath ? direct : undefined;
    const moves = current !== undefined && this.#arrival !== undefined && current.transport !== via;
    if (current && !(moves && this.#listened.has(current.transport))) {
      if (!current.setRemote(to)) return;
      this.direct.roamed++;
      this.pmtu?.moved(paths.publicKey, current);
      return;
    }
    const path = new DirectPath({ transport: via, remote: to, mtu: this.#directMtu });
    paths.add(path);
    if (current) {
      this.direct.roamed++;
      this.pmtu?.moved(paths.publicKey, path);
    } else this.direct.opened++;
  }

  /**
   * Roaming: the peer is answered on the path (and UDP address) its latest authenticated datagram took. A
   * steered peer that initiates a handshake over the relay does not hear us on our direct remote (it
   * restarted, or its own route is not direct): its selector stops trusting that remote, so the response
   * and what follows go over the relay too until the remote answers again. So does a transport datagram over
   * the relay while the route is `direct` and nothing came on the direct path for DIRECT_QUIET_MS: the peer
   * sends over the relay because its direct path went silent (its streams' 'silent'), and our answers (their
   * ACKs) must take the relay too.
   */
  #authenticated(paths: PeerPaths, source: DatagramSource | null, message: AuthenticatedMessage): void {
    const now = this.#clock.now();
    if (source === null) {
      if (message === 'initiation') this.disco?.distrustRemote(paths.publicKey);
      else if (message === 'transport' && now - paths.directHeardAt >= DIRECT_QUIET_MS) {
        this.direct.relayedWhileDirect++;
        this.disco?.distrustRemote(paths.publicKey);
      }
      paths.arrivedOn('relayed');
      return;
    }
    if (!this.#udp && !this.#arrival) return;
    paths.directHeardAt = now;
    this.#directTo(paths, source);
    paths.arrivedOn('direct');
  }

  /**
   * ICMP echo to the endpoint is answered or taken here (echo-answer.ts). Application traffic (anything but ICMP:
   * the liveness probes are ICMP echo) marks the peer active, so its paths are probed at the fast pace; an idle peer
   * is probed at keepalive pace.
   */
  #deliver(packet: Buffer, peer: Peer<PeerPaths>): void {
    if (isIcmpv4(packet)) {
      const echo = {
        self: this.#address,
        liveness: this.#liveness.get(peer),
        reply: (p: Buffer) => void peer.send(p),
        onEcho: (e: EchoEvent) => this.#onEcho?.(e, peer),
      };
      if (!answerEcho(packet, echo)) this.#onPacket(packet, peer);
      return;
    }
    peer.endpoint?.noteTraffic();
    if (!this.streams.input(packet)) this.#onPacket(packet, peer);
  }

  /**
   * An application packet (IPv4, destination at bytes 16..19): its peer is active. One lookup: a peer's
   * AllowedIPs are its tunnel address, so the paths at that address carry the peer to send it to; any
   * other destination goes to the device's AllowedIPs (which counts it as no-route).
   */
  #sendApp(packet: Buffer): boolean {
    const paths = packet.length >= 20 ? this.paths.forAddress(packet.readUInt32BE(16)) : undefined;
    const peer = paths?.peer;
    if (!paths || !peer) return this.device.send(packet);
    paths.noteTraffic();
    return peer.send(packet);
  }
}
