/** The types a Peer shares with its Device: the host interface, endpoints, drop reasons, events. */
import type { Clock } from '../../clock.js';
import type { WireGuardTimers } from './constants.js';
import type { IndexTable } from './index-table.js';
import type { NoiseIdentity } from './noise.js';
import type { Peer } from './peer.js';

/**
 * Where a peer's datagrams go: the peer hands each sealed datagram to its endpoint's `send` itself (a
 * tunnel endpoint's per-peer path set, a UDP address's sender), with no lookup and no closure of the
 * device's in between. The Device reads `key` (a stable name for logs and for the under-load rate limit).
 * A Device is generic over its endpoint type, so a peer's `endpoint` has the transport's own type.
 */
export interface Endpoint {
  readonly key: string;
  /** Hands one datagram to the transport; false when it was dropped there (never throw for that). */
  send(datagram: Buffer): boolean;
  /**
   * A datagram from this endpoint's peer authenticated (see PeerHost.onAuthenticated), after the peer's
   * endpoint moved to the one it came from. Optional: a transport that follows its peer (roaming, path
   * choice) implements it.
   */
  authenticated?(source: DatagramSource | null, message: AuthenticatedMessage): void;
  /**
   * The public key of the one peer whose datagrams arrive from this endpoint, when the transport names the
   * sender by its key (a relay connection: the relay authenticated that key). A datagram handed to
   * Device.receive with this endpoint that belongs to any other peer is dropped (`sender-mismatch`) before it
   * is opened: it never authenticates, never uses up the other peer's replay window and never moves that
   * peer's endpoint. Absent: the endpoint names no key (a UDP address; roaming rules apply).
   */
  readonly peerKey?: Uint8Array;
}

/**
 * The network address a datagram came from, when its transport does not name the sender (UDP): the
 * device finds the peer from the datagram itself. node:dgram's RemoteInfo is one.
 */
export interface DatagramSource {
  readonly address: string;
  readonly port: number;
}

/** Which of a peer's datagrams authenticated: a handshake initiation or response, or transport data. */
export type AuthenticatedMessage = 'initiation' | 'response' | 'transport';

/** What a Peer needs from its Device. */
export interface PeerHost<E extends Endpoint = Endpoint> {
  readonly identity: NoiseIdentity;
  readonly clock: Clock;
  readonly timers: WireGuardTimers;
  readonly mtu: number;
  readonly maxStaged: number;
  readonly indices: IndexTable<Peer<E>>;
  /** The device's counters the peers add to (datagrams handed to a transport). */
  readonly counters: { txDatagrams: number };
  /**
   * A datagram from `peer` authenticated (a valid handshake message, or transport data that opened and
   * passed the replay window), before the peer answers it. `source` is its network address when the
   * transport gave one (Device.receiveFrom), else null; `message` the kind of datagram. Called after the
   * peer's endpoint heard it (Endpoint.authenticated).
   */
  onAuthenticated?(peer: Peer<E>, source: DatagramSource | null, message: AuthenticatedMessage): void;
  deliver(packet: Buffer, peer: Peer<E>): void;
  /** True when `source` (an inner source address) routes to `peer` in AllowedIPs. */
  allowedSource(source: Uint8Array, peer: Peer<E>): boolean;
  debug(msg: string): void;
}

export type PeerDropReason =
  | 'staged-overflow'
  | 'handshake-timeout'
  | 'bad-size'
  | 'closed'
  | 'no-endpoint'
  | 'send-failed'
  | 'expired-keypair'
  | 'decrypt'
  | 'replay'
  | 'bad-ip'
  | 'allowed-ips';

export interface PeerEvents {
  /** A handshake completed; `initiator` tells our role. */
  handshake: [{ initiator: boolean }];
  /** A new keypair became current (data can flow). */
  session: [];
  /** Gave up after MaxTimerHandshakes retries; staged packets were dropped. */
  'handshake-timeout': [];
}
