/**
 * The paths to one peer, and the one Endpoint its WireGuard peer sees (as magicsock's per-peer endpoint):
 * WireGuard sends every datagram for the peer here and never learns an address, so its session (keys,
 * counters, replay window) carries on when the path under it changes. Datagrams from the peer, on any of
 * its paths, are handed to the device as coming from this same object.
 *
 * One path per kind. A peer that speaks disco is steered (steer()): its path selector's route decides
 * (path-selector.ts): `direct` the direct path, `relayed` the relayed one, `both` the direct path with a copy
 * of each datagram over the relay too (the current path is then the direct one, the smaller MTU). Any other
 * peer is answered on the kind its latest authenticated datagram arrived on (arrivedOn), else the first
 * path added: a stock WireGuard peer that reaches the endpoint's UDP port is answered over UDP.
 */
import { type RunFlushable, receiveRun } from '../arq/receive-run.js';
import { type SendRunFlushable, sendRun } from '../buffers/send-run.js';
import type { Peer } from '../wireguard/peer.js';
import type { AuthenticatedMessage, DatagramSource, Endpoint } from '../wireguard/peer-host.js';
import type { Path, PathBytes, PathKind } from './path.js';
import type { Route } from './path-selector.js';

/** Where a peer's application traffic is reported, and whether it had any lately (its path selector). */
export interface TrafficTracker {
  /** Application traffic to or from the peer within the selector's active window. */
  readonly active: boolean;
  /** An application packet was sent to or received from the peer (not a keepalive, probe or handshake). */
  noteTraffic(): void;
}

/** What steers a peer's paths: its selector's route (and its traffic tracking). */
export interface PathSteering extends TrafficTracker {
  readonly route: Route;
}

export interface PeerPathsOptions {
  publicKey: Buffer;
  /** The peer's tunnel address (u32). */
  address: number;
  /** Where the datagram bytes sent on each kind of path are added (shared by the endpoint's peers). */
  bytes?: PathBytes;
  /** The current path changed (its MTU may differ): called after the change. */
  onPathChange(peer: PeerPaths): void;
  /**
   * A datagram from the peer authenticated and it is not transport data over the relay (which only marks
   * the relayed path as the one it arrived on, here): a handshake, or anything from a UDP `source`.
   */
  onAuthenticated(peer: PeerPaths, source: DatagramSource | null, message: AuthenticatedMessage): void;
}

export class PeerPaths implements Endpoint {
  /** `peer:<base64 key>`: the name the device logs and rate-limits handshakes by. */
  readonly key: string;
  readonly publicKey: Buffer;
  /**
   * The peer's key (Endpoint.peerKey): a datagram handed to the device as coming from these paths (its relay
   * connection, which the relay authenticated by this key) that belongs to another peer is dropped.
   */
  readonly peerKey: Buffer;
  readonly address: number;
  readonly #paths: Path[] = [];
  readonly #onPathChange: (peer: PeerPaths) => void;
  readonly #onAuthenticated: PeerPathsOptions['onAuthenticated'];
  readonly #bytes: PathBytes | undefined;
  #current: Path | undefined;
  /** The relayed path while the route is `both` (each datagram also goes there). */
  #alsoRelayed: Path | undefined;
  #arrivedOn: PathKind | null = null;
  #steering: PathSteering | undefined;
  #tracker: TrafficTracker | undefined;

  constructor(o: PeerPathsOptions) {
    this.publicKey = o.publicKey;
    this.peerKey = o.publicKey;
    this.address = o.address;
    this.key = `peer:${o.publicKey.toString('base64')}`;
    this.#onPathChange = o.onPathChange;
    this.#onAuthenticated = o.onAuthenticated;
    this.#bytes = o.bytes;
  }

  /** The WireGuard peer these paths carry (set once the device accepted it). */
  peer: Peer<PeerPaths> | undefined;

  /** The path datagrams take now; undefined while the peer has none. */
  get path(): Path | undefined {
    return this.#current;
  }

  get all(): readonly Path[] {
    return this.#paths;
  }

  /** The peer's path of that kind. */
  get(kind: PathKind): Path | undefined {
    return this.#paths.find((p) => p.kind === kind);
  }

  /** The route `both` is in force: datagrams also go over the relay. */
  get duplicating(): boolean {
    return this.#alsoRelayed !== undefined;
  }

  /**
   * Application traffic to or from the peer within its selector's active window; true for a peer without
   * one (a stock WireGuard peer is kept at the pace of an active one).
   */
  get active(): boolean {
    return this.#tracker?.active ?? true;
  }

  /**
   * An application packet (not a keepalive, probe or handshake) went to or came from the peer. Inside a send
   * or receive run (one ARQ flush, one GRO read: microseconds) the first packet is told and the rest are not:
   * one clock read for the run where each packet read it.
   */
  noteTraffic(): void {
    if (this.#trafficNoted) return;
    this.#tracker?.noteTraffic();
    if (sendRun.defer(this.#runEnd) || receiveRun.defer(this.#runEnd)) this.#trafficNoted = true;
  }

  /** Traffic was told to the tracker in the open run (cleared at its end). */
  #trafficNoted = false;
  readonly #runEnd: SendRunFlushable & RunFlushable = {
    flushSendRun: () => {
      this.#trafficNoted = false;
    },
    flushRun: () => {
      this.#trafficNoted = false;
    },
  };

  /** From now on `tracker` hears of the peer's application traffic (before, or without, steering). */
  track(tracker: TrafficTracker): void {
    this.#tracker = tracker;
  }

  /** When (monotonic ms) a datagram from the peer last authenticated on the direct path (the endpoint sets it). */
  directHeardAt = Number.NEGATIVE_INFINITY;

  /**
   * Endpoint.authenticated: the peer's WireGuard state accepted a datagram that came this way. A transport
   * datagram over the relay goes to the owner only while the route is `direct` (the peer may have stopped hearing
   * the direct path); otherwise it just marks the relayed path as the way the peer speaks.
   */
  authenticated(source: DatagramSource | null, message: AuthenticatedMessage): void {
    if (source === null && message === 'transport' && this.#steering?.route !== 'direct') {
      this.arrivedOn('relayed');
    } else this.#onAuthenticated(this, source, message);
  }

  /** A datagram from the peer authenticated on its path of `kind`. */
  arrivedOn(kind: PathKind): void {
    if (this.#arrivedOn === kind) return;
    this.#arrivedOn = kind;
    this.#select();
  }

  /** From now on `steering`'s route picks the path (call reselect() when it changes). */
  steer(steering: PathSteering): void {
    this.#steering = steering;
    this.#tracker = steering;
    this.#select();
  }

  /** The steering route (or the paths' remotes) changed. */
  reselect(): void {
    this.#select();
  }

  /** Adds a path, in place of the peer's path of the same kind. */
  add(path: Path): void {
    const i = this.#paths.findIndex((p) => p.kind === path.kind);
    if (i < 0) this.#paths.push(path);
    else this.#paths[i] = path;
    this.#select();
  }

  /** Sends one datagram on the current path; false when there is none or it dropped the datagram. */
  send(datagram: Buffer): boolean {
    const current = this.#current;
    if (!current) return false;
    const relayed = this.#alsoRelayed;
    if (!relayed) return this.#sendOn(current, datagram);
    // The relayed path may frame the datagram in place and hand its memory back to a pool: it gets the
    // original, the direct path a copy.
    const direct = this.#sendOn(current, Buffer.from(datagram));
    return this.#sendOn(relayed, datagram) || direct;
  }

  #sendOn(path: Path, datagram: Buffer): boolean {
    const length = datagram.length;
    const sent = path.send(datagram);
    if (sent && this.#bytes) this.#bytes[path.kind].out += length;
    return sent;
  }

  #select(): void {
    const next = this.#steering ? this.#steered(this.#steering.route) : this.#byArrival();
    if (next === this.#current) return;
    this.#current = next;
    this.#onPathChange(this);
  }

  #byArrival(): Path | undefined {
    this.#alsoRelayed = undefined;
    return (this.#arrivedOn !== null ? this.get(this.#arrivedOn) : undefined) ?? this.#paths[0];
  }

  #steered(route: Route): Path | undefined {
    const direct = route === 'relayed' ? undefined : this.get('direct');
    const relayed = this.get('relayed');
    this.#alsoRelayed = route === 'both' && direct ? relayed : undefined;
    return direct ?? relayed ?? this.#paths[0];
  }
}
