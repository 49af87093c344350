/**
 * The WireGuard device: one static identity, its peers, the index table, AllowedIPs and the
 * receive dispatcher. This is the seam the rest of the product uses; datagram I/O is each peer's
 * endpoint (Endpoint.send), so the same Device runs over a UDP socket (test/helpers/udp-bind.ts in the
 * tests) or a relay.
 *
 * receive() never throws: garbage is counted in `stats.drops` and dropped. receive() decrypts in
 * place, so the datagram buffer is overwritten and onPacket gets a view into it, which the receiver may
 * keep: the datagram is the receiver's under the receive rule (shared/net/buffers/received.ts).
 */
import { type Clock, realClock } from '../../clock.js';
import { type ErrorCode, isTunnelError, TunnelError } from '../../errors.js';
import { KEY_LEN, parseKey } from '../../keys.js';
import { AllowedIps, parseCidr } from './allowed-ips.js';
import {
  DEFAULT_MAX_PEERS,
  DEFAULT_MAX_STAGED,
  DEFAULT_MTU,
  DEFAULT_TIMERS,
  INDICES_PER_PEER,
  MAX_MTU,
  MAX_PEERS_LIMIT,
  UNDER_LOAD_AFTER_TIME,
  UNDER_LOAD_HANDSHAKES_PER_SECOND,
  type WireGuardTimers,
} from './constants.js';
import { CookieChecker } from './cookie.js';
import { type CryptoSuite, defaultCrypto } from './crypto/index.js';
import { IndexTable } from './index-table.js';
import {
  DATA_MIN_LEN,
  DATA_RECEIVER,
  type Initiation,
  MSG_COOKIE_REPLY,
  MSG_INITIATION,
  MSG_RESPONSE,
  messageType,
  parseCookieReply,
  parseInitiation,
  parseResponse,
  type Response,
} from './messages.js';
import { consumeInitiation, consumeResponse, type NoiseIdentity } from './noise.js';
import { type DatagramSource, type Endpoint, Peer, type PeerHost, type TransportDropReason } from './peer.js';
import type { AuthenticatedMessage } from './peer-host.js';
import { RateLimiter } from './rate-limiter.js';

export type { DatagramSource, Endpoint } from './peer.js';
export { Peer } from './peer.js';
export type { AuthenticatedMessage } from './peer-host.js';

export interface DeviceOptions<E extends Endpoint = Endpoint> {
  privateKey: Uint8Array;
  clock?: Clock;
  /** Largest inner packet; default 1420. Relay paths may use up to 65535. */
  mtu?: number;
  onPacket(packet: Buffer, peer: Peer<E>): void;
  timers?: Partial<WireGuardTimers>;
  maxPeers?: number;
  maxStagedPerPeer?: number;
  /** Overrides the built-in under-load detection (mac2/cookies are enforced while it returns true). */
  underLoad?: () => boolean;
  /**
   * Every datagram's source endpoint was authenticated by the transport (the relay admitted that DERP key),
   * so replies reach the real sender. Under load the cookie round trip, which only proves that, is skipped;
   * the per-source handshake rate limit still applies. Default false (a UDP source address proves nothing).
   */
  authenticatedSources?: boolean;
  crypto?: CryptoSuite;
  logger?: { debug(...args: unknown[]): void };
  /**
   * A datagram from `peer` authenticated (see PeerHost.authenticated), before the peer answers it:
   * `source` is its address for receiveFrom(), null for receive(). Roaming transports move the peer's
   * endpoint here, and only here.
   */
  onAuthenticated?(peer: Peer<E>, source: DatagramSource | null, message: AuthenticatedMessage): void;
  /** Sends a cookie reply to a source no peer is known for (receiveFrom under load); absent: none sent. */
  sendToSource?(datagram: Buffer, source: DatagramSource): boolean;
  /**
   * Whether this device answers `peer` over receiveFrom (UDP) now; absent: every peer. A datagram of a peer it
   * does not is dropped as `not-owner` once its peer is known (an initiation's static key, else its receiver
   * index), before it is opened or answered and before its source is reported (a relay replica that does not
   * hold the peer's session: relay/data/hub/session-owner.ts).
   */
  answersUdp?(peer: Peer<E>): boolean;
}

export interface PeerConfig<E extends Endpoint = Endpoint> {
  publicKey: Uint8Array | string;
  presharedKey?: Uint8Array | string;
  endpoint?: E;
  /** CIDRs, IPv4 or IPv6. */
  allowedIps: string[];
  /** Seconds; 0 or absent = off. */
  persistentKeepalive?: number;
}

export type DeviceDropReason =
  | 'malformed'
  | 'bad-type'
  | 'mac1'
  | 'cookie-sent'
  | 'rate-limited'
  | 'unknown-index'
  | 'unknown-peer'
  | 'handshake'
  | 'replay'
  | 'cookie-ignored'
  | 'no-route'
  | 'sender-mismatch'
  | 'not-owner'
  | 'closed'
  | 'internal';

/** A zero count for every reason the device drops a datagram. */
export function noDeviceDrops(): Record<DeviceDropReason, number> {
  return {
    malformed: 0,
    'bad-type': 0,
    mac1: 0,
    'cookie-sent': 0,
    'rate-limited': 0,
    'unknown-index': 0,
    'unknown-peer': 0,
    handshake: 0,
    replay: 0,
    'cookie-ignored': 0,
    'no-route': 0,
    'sender-mismatch': 0,
    'not-owner': 0,
    closed: 0,
    internal: 0,
  };
}

/** Why receive()/receiveFrom() dropped a datagram (null: it authenticated). */
export type ReceiveDrop = DeviceDropReason | TransportDropReason;

export interface DeviceStats {
  peers: number;
  indices: number;
  rxDatagrams: number;
  txDatagrams: number;
  drops: Record<DeviceDropReason, number>;
}

const CODE_TO_DROP: Partial<Record<ErrorCode, DeviceDropReason>> = {
  WIRE_TRUNCATED: 'malformed',
  WIRE_MALFORMED: 'malformed',
  WIRE_TOO_LARGE: 'malformed',
  WIRE_BAD_TYPE: 'bad-type',
  WG_UNKNOWN_PEER: 'unknown-peer',
  WG_HANDSHAKE_FAILED: 'handshake',
  WG_REPLAY: 'replay',
  LIMIT_EXCEEDED: 'handshake',
};

function toKey(k: Uint8Array | string, what: string): Buffer {
  if (typeof k === 'string') return parseKey(k, what);
  if (k.length !== KEY_LEN) throw new TunnelError('KEY_INVALID', `${what} must be 32 bytes, got ${k.length}`);
  return Buffer.from(k);
}

export class Device<E extends Endpoint = Endpoint> {
  readonly timers: WireGuardTimers;
  readonly mtu: number;
  readonly publicKey: Buffer;
  readonly #options: DeviceOptions<E>;
  readonly #clock: Clock;
  readonly #identity: NoiseIdentity;
  readonly #peers = new Map<string, Peer<E>>();
  readonly #allowed = new AllowedIps<Peer<E>>();
  readonly #indices: IndexTable<Peer<E>>;
  readonly #cookies: CookieChecker;
  readonly #limiter: RateLimiter;
  readonly #host: PeerHost<E>;
  readonly #maxPeers: number;
  readonly #stats: DeviceStats = {
    peers: 0,
    indices: 0,
    rxDatagrams: 0,
    txDatagrams: 0,
    drops: noDeviceDrops(),
  };
  #handshakeWindowStart = 0;
  #handshakesInWindow = 0;
  #underLoadUntil = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(opts: DeviceOptions<E>) {
    this.#options = opts;
    this.#clock = opts.clock ?? realClock;
    this.timers = { ...DEFAULT_TIMERS, ...opts.timers };
    this.mtu = opts.mtu ?? DEFAULT_MTU;
    if (!Number.isInteger(this.mtu) || this.mtu < 576 || this.mtu > MAX_MTU) {
      throw new TunnelError('BAD_CONFIG', `mtu ${this.mtu} is out of range 576..${MAX_MTU}`);
    }
    for (const [k, v] of Object.entries(this.timers)) {
      const ok = typeof v === 'bigint' ? v > 0n : typeof v === 'number' && Number.isFinite(v) && v >= 0;
      if (!ok)
        throw new TunnelError(
          'BAD_CONFIG',
          `timers.${k} must be a non-negative number (bigint for message counts)`,
        );
    }
    this.#maxPeers = opts.maxPeers ?? DEFAULT_MAX_PEERS;
    if (!Number.isInteger(this.#maxPeers) || this.#maxPeers < 1 || this.#maxPeers > MAX_PEERS_LIMIT) {
      throw new TunnelError('BAD_CONFIG', `maxPeers ${this.#maxPeers} is out of range 1..${MAX_PEERS_LIMIT}`);
    }
    const c = opts.crypto ?? defaultCrypto();
    const staticKey = c.x25519.importPrivate(toKey(opts.privateKey, 'private key'));
    this.publicKey = staticKey.publicKey;
    this.#identity = { staticKey, aead: c.aead, x25519: c.x25519 };
    this.#indices = new IndexTable<Peer<E>>(this.#maxPeers * INDICES_PER_PEER);
    this.#cookies = new CookieChecker(staticKey.publicKey, this.timers.cookieRefreshTime);
    this.#limiter = new RateLimiter(this.#clock);
    const log = opts.logger;
    this.#host = {
      identity: this.#identity,
      clock: this.#clock,
      timers: this.timers,
      mtu: this.mtu,
      maxStaged: opts.maxStagedPerPeer ?? DEFAULT_MAX_STAGED,
      indices: this.#indices,
      counters: this.#stats,
      deliver: opts.onPacket,
      onAuthenticated: opts.onAuthenticated,
      allowedSource: (src, peer) => this.#allowed.lookup(src) === peer,
      debug: (m) => log?.debug(m),
    };
  }

  get stats(): DeviceStats {
    return {
      ...this.#stats,
      peers: this.#peers.size,
      indices: this.#indices.size,
      drops: { ...this.#stats.drops },
    };
  }

  get peers(): Peer<E>[] {
    return [...this.#peers.values()];
  }

  addPeer(cfg: PeerConfig<E>): Peer<E> {
    if (this.#closed) throw new TunnelError('CLOSED', 'device is closed');
    const pk = toKey(cfg.publicKey, 'peer public key');
    const id = pk.toString('hex');
    if (this.#peers.has(id))
      throw new TunnelError('CONFLICT', 'a peer with this public key is already configured');
    if (pk.equals(this.publicKey))
      throw new TunnelError('BAD_INPUT', "peer public key is the device's own key");
    if (this.#peers.size >= this.#maxPeers) {
      throw new TunnelError('WG_PEER_LIMIT', `device already holds ${this.#maxPeers} peers`);
    }
    const cidrs = cfg.allowedIps.map((s) => parseCidr(s));
    const psk =
      cfg.presharedKey === undefined ? Buffer.alloc(KEY_LEN) : toKey(cfg.presharedKey, 'preshared key');
    const ka = cfg.persistentKeepalive ?? 0;
    if (!Number.isInteger(ka) || ka < 0 || ka > 65535) {
      throw new TunnelError('BAD_INPUT', `persistentKeepalive ${ka} must be an integer 0..65535 seconds`);
    }
    const remote = this.#identity.x25519.importPublic(pk);
    let peer: Peer<E>;
    try {
      peer = new Peer<E>(this.#host, remote, psk, cfg.endpoint, ka);
    } catch (err) {
      throw new TunnelError('KEY_INVALID', 'peer public key is not usable (low-order point)', { cause: err });
    }
    this.#peers.set(id, peer);
    for (const c of cidrs) this.#allowed.insert(c, peer);
    if (ka > 0 && cfg.endpoint) peer.sendKeepalive();
    return peer;
  }

  getPeer(publicKey: Uint8Array | string): Peer<E> | undefined {
    return this.#peers.get(toKey(publicKey, 'peer public key').toString('hex'));
  }

  removePeer(publicKey: Uint8Array | string): boolean {
    const id = toKey(publicKey, 'peer public key').toString('hex');
    const peer = this.#peers.get(id);
    if (!peer) return false;
    this.#allowed.removeValue(peer);
    peer.close();
    this.#peers.delete(id);
    return true;
  }

  /**
   * Routes an inner IP packet by destination address through AllowedIPs. False when it was dropped
   * (no route, or the peer dropped it: see Peer.send); true when sent or staged for a handshake.
   */
  send(packet: Buffer): boolean {
    const v = packet.length > 0 ? packet[0]! >> 4 : 0;
    const dst =
      v === 4 && packet.length >= 20
        ? packet.subarray(16, 20)
        : v === 6 && packet.length >= 40
          ? packet.subarray(24, 40)
          : null;
    const peer = dst ? this.#allowed.lookup(dst) : undefined;
    if (!peer) {
      this.#stats.drops['no-route']++;
      return false;
    }
    return peer.send(packet);
  }

  /**
   * Handles one datagram from the peer of endpoint `from` (a transport that names the sender, e.g. a relay
   * that authenticated its key). When `from` names its peer's key (Endpoint.peerKey), a datagram of any other
   * peer is dropped as `sender-mismatch` once its peer is known, before it is opened. Returns why it was
   * dropped, or null once it authenticated. Never throws.
   */
  receive(datagram: Buffer, from: E): ReceiveDrop | null {
    return this.#receiveGuarded(datagram, from, null);
  }

  /**
   * Handles one datagram from a network address that names no peer (UDP): the peer is found from the
   * datagram (an initiation's static key, else the receiver index). Only once it authenticates does the
   * device report `source` (onAuthenticated). Under load a handshake must carry a valid mac2 for the
   * source (a cookie reply goes back to it otherwise), whatever `authenticatedSources` says.
   */
  receiveFrom(datagram: Buffer, source: DatagramSource): ReceiveDrop | null {
    return this.#receiveGuarded(datagram, undefined, source);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const p of this.#peers.values()) p.close();
  }

  #receiveGuarded(d: Buffer, from: E | undefined, source: DatagramSource | null): ReceiveDrop | null {
    this.#stats.rxDatagrams++;
    if (this.#closed) return this.#dropped('closed');
    try {
      return this.#receive(d, from, source);
    } catch (err) {
      const reason = isTunnelError(err) ? (CODE_TO_DROP[err.code] ?? 'internal') : 'internal';
      const who = from ? from.key : 'a source address';
      this.#options.logger?.debug(
        `dropped datagram from ${who}: ${isTunnelError(err) ? err.message : 'error'}`,
      );
      return this.#dropped(reason);
    }
  }

  /** Counts a device-level drop (a peer counts its own transport drops in `peer.drops`). */
  #dropped(reason: DeviceDropReason): DeviceDropReason {
    this.#stats.drops[reason]++;
    return reason;
  }

  #receive(d: Buffer, from: E | undefined, source: DatagramSource | null): ReceiveDrop | null {
    const type = messageType(d);
    if (type === MSG_INITIATION || type === MSG_RESPONSE) return this.#handshake(d, type, from, source);
    if (type === MSG_COOKIE_REPLY) {
      const r = parseCookieReply(d);
      const e = this.#indices.get(r.receiverIndex);
      if (e && this.#fromOtherPeer(from, e.peer)) return this.#dropped('sender-mismatch');
      if (e && this.#notAnswered(source, e.peer)) return this.#dropped('not-owner');
      return e?.peer.cookies.consumeReply(r, this.#clock.now()) ? null : this.#dropped('cookie-ignored');
    }
    if (d.length < DATA_MIN_LEN) return this.#dropped('malformed');
    const e = this.#indices.get(d.readUInt32LE(DATA_RECEIVER));
    if (!e?.keypair) return this.#dropped('unknown-index');
    if (this.#fromOtherPeer(from, e.peer)) return this.#dropped('sender-mismatch');
    if (this.#notAnswered(source, e.peer)) return this.#dropped('not-owner');
    return e.peer.receiveTransport(e.keypair, d, from, source);
  }

  /** A UDP datagram (`source` set) of a peer this device does not answer over UDP now (answersUdp). */
  #notAnswered(source: DatagramSource | null, peer: Peer<E>): boolean {
    return source !== null && this.#options.answersUdp?.(peer) === false;
  }

  /** `from` names the key of a peer other than `peer` (see Endpoint.peerKey). */
  #fromOtherPeer(from: E | undefined, peer: Peer<E>): boolean {
    return from?.peerKey !== undefined && !peer.publicKey.equals(from.peerKey);
  }

  #handshake(
    d: Buffer,
    type: number,
    from: E | undefined,
    source: DatagramSource | null,
  ): ReceiveDrop | null {
    const msg = type === MSG_INITIATION ? parseInitiation(d) : parseResponse(d);
    if (!this.#cookies.checkMac1(d)) return this.#dropped('mac1');
    if (this.#isUnderLoad()) {
      // A UDP source is only an address: the cookie round trip proves the sender receives there.
      const sourceKey = from ? from.key : `udp:${source?.address}`;
      const proven = from !== undefined && this.#options.authenticatedSources === true;
      if (!proven && !this.#cookies.checkMac2(d, Buffer.from(sourceKey), this.#clock.now())) {
        const reply = this.#cookies.createReply(
          d,
          msg.senderIndex,
          Buffer.from(sourceKey),
          this.#clock.now(),
        );
        if (from) {
          if (from.send(reply)) this.#stats.txDatagrams++;
        } else if (source) this.#options.sendToSource?.(reply, source);
        return this.#dropped('cookie-sent');
      }
      if (!this.#limiter.allow(sourceKey)) return this.#dropped('rate-limited');
    }
    if (type === MSG_INITIATION) return this.#initiation(msg as Initiation, from, source);
    const r = msg as Response;
    const e = this.#indices.get(r.receiverIndex);
    if (!e || e.keypair) return this.#dropped('unknown-index');
    if (this.#fromOtherPeer(from, e.peer)) return this.#dropped('sender-mismatch');
    if (this.#notAnswered(source, e.peer)) return this.#dropped('not-owner');
    consumeResponse(this.#identity, r, e.peer);
    e.peer.onResponseConsumed(from, source);
    return null;
  }

  /**
   * An initiation: its sender's static key is known once decrypted, and checked against `from` before the
   * peer's handshake state changes (a mismatch never consumes it).
   */
  #initiation(msg: Initiation, from: E | undefined, source: DatagramSource | null): ReceiveDrop | null {
    let mismatch = false;
    let notOwner = false;
    const lookup = (pk: Buffer): Peer<E> | undefined => {
      const peer = this.#peers.get(pk.toString('hex'));
      mismatch = peer !== undefined && this.#fromOtherPeer(from, peer);
      notOwner = peer !== undefined && this.#notAnswered(source, peer);
      return mismatch || notOwner ? undefined : peer;
    };
    let peer: Peer<E>;
    try {
      peer = consumeInitiation(
        this.#identity,
        msg,
        lookup,
        this.#clock.now(),
        this.timers.handshakeInitiationRate,
      );
    } catch (err) {
      if (mismatch) return this.#dropped('sender-mismatch');
      if (notOwner) return this.#dropped('not-owner');
      throw err;
    }
    peer.onInitiationConsumed(from, source);
    return null;
  }

  #isUnderLoad(): boolean {
    const now = this.#clock.now();
    if (now - this.#handshakeWindowStart >= 1000) {
      this.#handshakeWindowStart = now;
      this.#handshakesInWindow = 0;
    }
    if (++this.#handshakesInWindow >= UNDER_LOAD_HANDSHAKES_PER_SECOND) {
      this.#underLoadUntil = now + UNDER_LOAD_AFTER_TIME;
    }
    if (this.#options.underLoad) return this.#options.underLoad();
    return now < this.#underLoadUntil;
  }
}
