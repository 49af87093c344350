/**
 * One WireGuard peer: handshake initiation/response bookkeeping, keypair slots, the staged packet
 * queue and the timer state machine of wireguard-go's timers.go (reference §9). All time goes through
 * the device's injected Clock; every threshold comes from the device's WireGuardTimers.
 */
import { EventEmitter } from 'node:events';
import { isTunnelError } from '../../errors.js';
import { headroomOf } from '../buffers/packet-room.js';
import { type SendRunFlushable, sendRun } from '../buffers/send-run.js';
import { CookieGenerator } from './cookie.js';
import type { PublicKeyHandle } from './crypto/x25519.js';
import { splitInnerPacket } from './inner-packet.js';
import { Keypair, Keypairs } from './keypair.js';
import { readTransportCounter } from './messages.js';
import { createInitiation, createResponse, deriveSession, Handshake } from './noise.js';
import type {
  AuthenticatedMessage,
  DatagramSource,
  Endpoint,
  PeerDropReason,
  PeerEvents,
  PeerHost,
} from './peer-host.js';
import { PeerTimer } from './peer-timer.js';
import { TimestampGenerator } from './tai64n.js';
import { openTransport, sealTransport, sealTransportRun, TRANSPORT_HEADROOM } from './transport.js';

export type { DatagramSource, Endpoint, PeerDropReason, PeerEvents, PeerHost } from './peer-host.js';

/** Why a transport datagram for a known index was dropped before it authenticated. */
export type TransportDropReason = 'expired-keypair' | 'decrypt' | 'replay';

const EMPTY = Buffer.alloc(0);
/** Packets a peer holds for one send run before it seals and sends them (a UDP GSO run's most). */
const MAX_RUN_PACKETS = 64;

export class Peer<E extends Endpoint = Endpoint> extends EventEmitter<PeerEvents> {
  readonly handshake = new Handshake();
  readonly timestamps = new TimestampGenerator();
  readonly cookies: CookieGenerator;
  readonly keypairs = new Keypairs();
  readonly staticStatic: Buffer;
  readonly drops: Record<PeerDropReason, number> = {
    'staged-overflow': 0,
    'handshake-timeout': 0,
    'bad-size': 0,
    closed: 0,
    'no-endpoint': 0,
    'send-failed': 0,
    'expired-keypair': 0,
    decrypt: 0,
    replay: 0,
    'bad-ip': 0,
    'allowed-ips': 0,
  };
  endpoint: E | undefined;
  persistentKeepalive: number;
  rxBytes = 0;
  txBytes = 0;
  /** Wall-clock ms of the last completed handshake, or null. */
  lastHandshakeAt: number | null = null;
  handshakeAttempts = 0;

  readonly #host: PeerHost<E>;
  readonly #staged: Buffer[] = [];
  // wireguard-go's five peer timers.
  readonly #retransmit: PeerTimer;
  readonly #sendKeepaliveTimer: PeerTimer;
  readonly #newHandshake: PeerTimer;
  readonly #zeroKeyMaterial: PeerTimer;
  readonly #persistentKeepalive: PeerTimer;
  readonly #nonce = Buffer.alloc(12);
  /** Packets held for the open send run (shared/net/buffers/send-run.ts), sealed together at its end. */
  #deferred: Buffer[] = [];
  readonly #runFlush: SendRunFlushable = { flushSendRun: () => this.#sendDeferred() };
  #handshakeIndex: number | null = null;
  #lastSentHandshake = Number.NEGATIVE_INFINITY;
  #needAnotherKeepalive = false;
  #sentLastMinuteHandshake = false;
  #closed = false;

  constructor(
    host: PeerHost<E>,
    readonly remoteStatic: PublicKeyHandle,
    readonly presharedKey: Buffer,
    endpoint: E | undefined,
    persistentKeepalive: number,
  ) {
    super();
    this.#host = host;
    this.staticStatic = host.identity.x25519.dh(host.identity.staticKey, remoteStatic);
    this.cookies = new CookieGenerator(remoteStatic.raw, host.timers.cookieRefreshTime);
    this.endpoint = endpoint;
    this.persistentKeepalive = persistentKeepalive;
    // close() stops them all: none fires after it.
    const timer = (fn: () => void) => new PeerTimer(host.clock, fn);
    this.#retransmit = timer(() => this.#expiredRetransmit());
    this.#sendKeepaliveTimer = timer(() => this.#expiredSendKeepalive());
    this.#newHandshake = timer(() => {
      this.#host.debug('retrying handshake: stopped hearing back');
      this.sendHandshakeInitiation(false);
    });
    this.#zeroKeyMaterial = timer(() => {
      this.#host.debug('zeroing key material');
      for (const kp of this.keypairs.clear()) this.#host.indices.delete(kp.localIndex);
      this.#dropHandshakeIndex();
      this.handshake.clear();
    });
    this.#persistentKeepalive = timer(() => this.sendKeepalive());
  }

  get publicKey(): Buffer {
    return this.remoteStatic.raw;
  }

  get stagedCount(): number {
    return this.#staged.length;
  }

  /** True when the current keypair may be used to send. */
  get isSessionUp(): boolean {
    return this.#usable(this.keypairs.current, this.#host.clock.now());
  }

  /**
   * Sends an inner IP packet: at once under a usable keypair, else staged and a handshake is started.
   * False when it was dropped: closed, bad size, or refused by the transport (each counted in `drops`).
   * Inside a send run (shared/net/buffers/send-run.ts) a packet granted room (shared/net/buffers/packet-room.ts)
   * is held and sent at the run's end with the run's others, sealed in one call (transport.ts sealTransportRun);
   * it then counts as sent here, and a refusal by the transport only in `drops`.
   */
  send(packet: Buffer): boolean {
    if (this.#closed) return this.#drop('closed');
    if (packet.length > this.#host.mtu || packet.length === 0) return this.#drop('bad-size');
    if (this.#staged.length === 0 && this.endpoint && this.#mayDefer(packet)) {
      this.#deferred.push(packet);
      if (this.#deferred.length >= MAX_RUN_PACKETS) this.#sendDeferred();
      return true;
    }
    if (this.#deferred.length > 0) this.#sendDeferred(); // what the run holds leaves first
    const kp = this.keypairs.current;
    const now = this.#host.clock.now();
    if (this.#staged.length === 0 && this.endpoint && kp && this.#usable(kp, now)) {
      const sent = this.#sendUnder(kp, packet);
      this.#sentUnder(kp, now, true);
      return sent;
    }
    this.#stage(Buffer.from(packet));
    this.sendStagedPackets();
    return true;
  }

  /** Sends a keepalive (or whatever is staged). */
  sendKeepalive(): void {
    if (this.#staged.length === 0) this.#staged.push(EMPTY);
    this.sendStagedPackets();
  }

  sendStagedPackets(): void {
    if (this.#closed || this.#staged.length === 0) return;
    const kp = this.keypairs.current;
    const now = this.#host.clock.now();
    if (!kp || !this.#usable(kp, now)) {
      this.sendHandshakeInitiation(false);
      return;
    }
    if (!this.endpoint) return;
    let data = false;
    while (this.#staged.length > 0) {
      if (kp.sendCounter >= this.#host.timers.rejectAfterMessages) break;
      const p = this.#staged.shift()!;
      if (p.length > 0) data = true;
      this.#sendUnder(kp, p);
    }
    this.#sentUnder(kp, now, data);
  }

  /**
   * Sends a handshake initiation, at most one per rekeyTimeout unless `force` (the transport to the peer was
   * replaced, so the peer may be a new instance that holds none of our sessions).
   */
  sendHandshakeInitiation(isRetry: boolean, opts: { force?: boolean } = {}): void {
    if (this.#closed) return;
    const now = this.#host.clock.now();
    if (!isRetry) this.handshakeAttempts = 0;
    if (!opts.force && now - this.#lastSentHandshake < this.#host.timers.rekeyTimeout) return;
    this.#lastSentHandshake = now;
    let msg: Buffer;
    try {
      const idx = this.#newHandshakeIndex();
      msg = createInitiation(this.#host.identity, this, idx, this.#host.clock.wallNow());
    } catch (err) {
      this.#host.debug(`initiation not created: ${isTunnelError(err) ? err.code : 'error'}`);
      return;
    }
    this.cookies.addMacs(msg, now);
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketSent();
    // Armed before sending: a transport that answers synchronously (both ends in one process) completes
    // the handshake inside #sendRaw, and that completion must find the timer to cancel.
    this.timersHandshakeInitiated();
    this.#sendRaw(msg);
  }

  // --- called by the device after it authenticated a message ---------------------------------
  // `from` is the endpoint the transport named (undefined when it gave only a `source` address).

  /** The device consumed an initiation from this peer: answer it and stage the new keypair as `next`. */
  onInitiationConsumed(from: E | undefined, source: DatagramSource | null = null): void {
    this.#authenticated(from, source, 'initiation');
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketReceived();
    const now = this.#host.clock.now();
    this.#lastSentHandshake = now;
    const msg = createResponse(this.#host.identity, this, this.#newHandshakeIndex());
    this.cookies.addMacs(msg, now);
    this.#installSession();
    this.timersSessionDerived();
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketSent();
    this.#sendRaw(msg);
    this.emit('handshake', { initiator: false });
  }

  /** The device consumed a response to our initiation: the new keypair is current; confirm it. */
  onResponseConsumed(from: E | undefined, source: DatagramSource | null = null): void {
    this.#authenticated(from, source, 'response');
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketReceived();
    this.#installSession();
    this.timersSessionDerived();
    this.timersHandshakeComplete();
    this.emit('handshake', { initiator: true });
    this.emit('session');
    this.sendKeepalive();
  }

  /**
   * A transport message whose receiver index maps to `kp` (one of ours). Returns why it was dropped
   * before it authenticated, or null once it did (what follows, e.g. a bad inner packet, is counted here).
   */
  receiveTransport(
    kp: Keypair,
    datagram: Buffer,
    from: E | undefined,
    source: DatagramSource | null = null,
  ): TransportDropReason | null {
    const t = this.#host.timers;
    if (this.#host.clock.now() - kp.createdAt >= t.rejectAfterTime) return this.#dropIn('expired-keypair');
    const plain = openTransport(this.#host.identity.aead, kp, datagram, this.#nonce);
    if (!plain) return this.#dropIn('decrypt');
    if (!kp.replay.validate(readTransportCounter(datagram), t.rejectAfterMessages))
      return this.#dropIn('replay');
    this.#authenticated(from, source, 'transport');
    const { promoted, dropped } = this.keypairs.receivedWith(kp);
    if (promoted) {
      if (dropped) this.#host.indices.delete(dropped.localIndex);
      this.timersHandshakeComplete();
      this.emit('session');
      this.sendStagedPackets();
    }
    this.#keepKeyFreshReceiving();
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketReceived();
    this.rxBytes += datagram.length;
    if (plain.length === 0) return null; // keepalive
    this.timersDataReceived();
    const packet = this.#checkInner(plain);
    if (packet) this.#host.deliver(packet, this);
    return null;
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#allTimers()) t.stop();
    this.drops.closed += this.#staged.length + this.#deferred.length;
    this.#staged.length = 0;
    this.#deferred = [];
    this.#host.indices.deletePeer(this);
    this.keypairs.clear();
    this.handshake.clear();
  }

  // --- timers (wireguard-go timers.go) ----------------------------------------------------------

  timersDataSent(): void {
    if (!this.#newHandshake.armed) {
      const t = this.#host.timers;
      this.#newHandshake.arm(t.keepaliveTimeout + t.rekeyTimeout + this.#jitter());
    }
  }

  timersDataReceived(): void {
    if (!this.#sendKeepaliveTimer.armed) {
      this.#sendKeepaliveTimer.arm(this.#host.timers.keepaliveTimeout);
    } else {
      this.#needAnotherKeepalive = true;
    }
  }

  timersAnyAuthenticatedPacketSent(): void {
    this.#sendKeepaliveTimer.disarm();
  }

  timersAnyAuthenticatedPacketReceived(): void {
    this.#newHandshake.disarm();
  }

  timersHandshakeInitiated(): void {
    this.#retransmit.arm(this.#host.timers.rekeyTimeout + this.#jitter());
  }

  timersHandshakeComplete(): void {
    this.#retransmit.disarm();
    this.handshakeAttempts = 0;
    this.#sentLastMinuteHandshake = false;
    this.lastHandshakeAt = this.#host.clock.wallNow();
  }

  timersSessionDerived(): void {
    this.#zeroKeyMaterial.arm(this.#host.timers.rejectAfterTime * 3);
  }

  timersAnyAuthenticatedPacketTraversal(): void {
    if (this.persistentKeepalive > 0) {
      this.#persistentKeepalive.arm(this.persistentKeepalive * 1000);
    }
  }

  #expiredRetransmit(): void {
    const t = this.#host.timers;
    if (this.handshakeAttempts > t.maxTimerHandshakes) {
      this.#host.debug(`handshake did not complete after ${this.handshakeAttempts + 1} attempts, giving up`);
      this.#sendKeepaliveTimer.disarm();
      this.drops['handshake-timeout'] += this.#staged.length;
      this.#staged.length = 0;
      if (!this.#zeroKeyMaterial.armed) this.timersSessionDerived();
      this.emit('handshake-timeout');
      return;
    }
    this.handshakeAttempts++;
    this.sendHandshakeInitiation(true);
  }

  #expiredSendKeepalive(): void {
    this.sendKeepalive();
    if (this.#needAnotherKeepalive) {
      this.#needAnotherKeepalive = false;
      this.#sendKeepaliveTimer.arm(this.#host.timers.keepaliveTimeout);
    }
  }

  // --- internals --------------------------------------------------------------------------------

  #usable(kp: Keypair | null, now: number): boolean {
    if (!kp) return false;
    const t = this.#host.timers;
    return kp.sendCounter < t.rejectAfterMessages && now - kp.createdAt < t.rejectAfterTime;
  }

  /** Held for the open send run: a packet granted room for the transport header (it is sealed in place). */
  #mayDefer(packet: Buffer): boolean {
    return headroomOf(packet) >= TRANSPORT_HEADROOM && sendRun.defer(this.#runFlush);
  }

  /**
   * Seals what the send run held in one call and sends it (its end, or MAX_RUN_PACKETS held); staged instead
   * when the keypair cannot send them all now (the staged path starts a handshake as a direct send would).
   */
  #sendDeferred(): void {
    const packets = this.#deferred;
    if (packets.length === 0 || this.#closed) return;
    this.#deferred = [];
    const kp = this.keypairs.current;
    const now = this.#host.clock.now();
    const fits = kp !== null && kp.sendCounter + packets.length <= this.#host.timers.rejectAfterMessages;
    if (this.#staged.length > 0 || !this.endpoint || !kp || !fits || !this.#usable(kp, now)) {
      for (const p of packets) this.#stage(Buffer.from(p));
      this.sendStagedPackets();
      return;
    }
    const sealed: Buffer[] = [];
    sealTransportRun(this.#host.identity.aead, kp, packets, this.#host.mtu, this.#nonce, sealed);
    for (const dg of sealed) this.#sendRaw(dg);
    this.#sentUnder(kp, now, true);
  }

  /** The timers and the rekey check after sending under `kp` (once per send or run). */
  #sentUnder(kp: Keypair, now: number, data: boolean): void {
    if (data) this.timersDataSent();
    this.timersAnyAuthenticatedPacketTraversal();
    this.timersAnyAuthenticatedPacketSent();
    this.#keepKeyFreshSending(kp, now);
  }

  #keepKeyFreshSending(kp: Keypair, now: number): void {
    const t = this.#host.timers;
    const age = now - kp.createdAt;
    if (kp.sendCounter > t.rekeyAfterMessages || (kp.isInitiator && age > t.rekeyAfterTime)) {
      this.sendHandshakeInitiation(false);
    }
  }

  #keepKeyFreshReceiving(): void {
    if (this.#sentLastMinuteHandshake) return;
    const kp = this.keypairs.current;
    const t = this.#host.timers;
    if (
      kp?.isInitiator &&
      this.#host.clock.now() - kp.createdAt > t.rejectAfterTime - t.keepaliveTimeout - t.rekeyTimeout
    ) {
      this.#sentLastMinuteHandshake = true;
      this.sendHandshakeInitiation(false);
    }
  }

  #sendUnder(kp: Keypair, packet: Buffer): boolean {
    const dg = sealTransport(this.#host.identity.aead, kp, packet, this.#host.mtu, this.#nonce);
    return this.#sendRaw(dg);
  }

  #sendRaw(dg: Buffer): boolean {
    const endpoint = this.endpoint;
    if (!endpoint) return this.#drop('no-endpoint');
    const length = dg.length; // read first: the transport may hand the memory back to a pool
    if (!endpoint.send(dg)) return this.#drop('send-failed');
    this.#host.counters.txDatagrams++;
    this.txBytes += length;
    return true;
  }

  /** Roaming: replies go where the latest authenticated datagram came from. */
  #authenticated(from: E | undefined, source: DatagramSource | null, message: AuthenticatedMessage): void {
    if (from) this.endpoint = from;
    this.endpoint?.authenticated?.(source, message);
    this.#host.onAuthenticated?.(this, source, message);
  }

  #dropIn(reason: TransportDropReason): TransportDropReason {
    this.drops[reason]++;
    return reason;
  }

  #drop(reason: PeerDropReason): false {
    this.drops[reason]++;
    return false;
  }

  #stage(p: Buffer): void {
    if (this.#staged.length >= this.#host.maxStaged) {
      this.#staged.shift();
      this.drops['staged-overflow']++;
    }
    this.#staged.push(p);
  }

  #newHandshakeIndex(): number {
    this.#dropHandshakeIndex();
    const idx = this.#host.indices.allocate(this);
    this.#handshakeIndex = idx;
    return idx;
  }

  #dropHandshakeIndex(): void {
    if (this.#handshakeIndex !== null) this.#host.indices.delete(this.#handshakeIndex);
    this.#handshakeIndex = null;
  }

  #installSession(): void {
    const s = deriveSession(this.handshake);
    this.#handshakeIndex = null; // the handshake's index now names the keypair
    // Both keys in one 64-byte allocation instead of two HMAC digests with an ArrayBuffer each (a hub
    // holds a keypair per agent: ~0.45 KiB of RSS saved per session).
    const keys = Buffer.allocUnsafeSlow(64);
    keys.set(s.sendKey, 0);
    keys.set(s.recvKey, 32);
    const kp = new Keypair(
      keys.subarray(0, 32),
      keys.subarray(32, 64),
      s.localIndex,
      s.remoteIndex,
      s.isInitiator,
      this.#host.clock.now(),
    );
    this.#host.indices.setKeypair(s.localIndex, kp);
    for (const old of this.keypairs.install(kp)) this.#host.indices.delete(old.localIndex);
  }

  /** Length check, padding strip and AllowedIPs source check (reference §7 step 8). */
  #checkInner(p: Buffer): Buffer | null {
    const inner = splitInnerPacket(p);
    if (!inner) {
      this.drops['bad-ip']++;
      return null;
    }
    if (!this.#host.allowedSource(inner.source, this)) {
      this.drops['allowed-ips']++;
      return null;
    }
    return inner.packet;
  }

  #jitter(): number {
    return Math.floor(Math.random() * this.#host.timers.rekeyTimeoutJitterMax);
  }

  #allTimers(): PeerTimer[] {
    return [
      this.#retransmit,
      this.#sendKeepaliveTimer,
      this.#newHandshake,
      this.#zeroKeyMaterial,
      this.#persistentKeepalive,
    ];
  }
}
