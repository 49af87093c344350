/**
 * The disco side of a tunnel endpoint: for each peer a path selector (path-selector.ts) and the pings it
 * asks for, sealed (shared/disco) and sent over the relay or the UDP socket; every disco message that
 * arrives, over either, is opened, checked against the replay guard and handled here: a ping is answered
 * the way it came (over UDP with the address it came from), a pong goes to the selector, a call-me-maybe
 * (over the relay only) gives the peer's candidates and is answered with ours at once when its list changed,
 * else at most every `callMeMaybeMinMs`; the candidates a call-me-maybe names, and the addresses a peer's UDP
 * pings come from, are screened first (shared/net/disco/candidate-address.ts: never loopback, unspecified,
 * multicast, broadcast, link-local, reserved or our own addresses; refusals counted in `candidatesRefused`), and
 * each peer's call-me-maybes, new candidates and pings to unconfirmed candidates are rate-limited
 * (disco-limits.ts); a path MTU probe (over UDP only) is answered with an ack of its size
 * to where it came from, and an ack goes to `onProbeAck`. Anything refused is dropped and counted by reason
 * (`dropped`), never thrown, and never
 * moves a peer's route: only a pong to one of our own pings does that.
 *
 * The owner hands in the carriers (`sendRelay`, `sendUdp` when a socket is open), tells it which keys are
 * peers, the local candidates and conditions, and each peer's traffic (through the handle addPeer returns);
 * it hears of each route change in `onRouteChange`.
 */
import type { Clock, TimerHandle } from '../../clock.js';
import { keyToBase64 } from '../../keys.js';
import { TokenBucket } from '../../token-bucket.js';
import {
  type CandidateRefusal,
  candidateRefusal,
  emptyRefusalCounts,
  OwnAddresses,
} from '../disco/candidate-address.js';
import {
  type DiscoAddress,
  type DiscoDropReason,
  type DiscoMessage,
  type DiscoProbe,
  type DiscoProbeAck,
  emptyDropCounts,
  newTxid,
  openDisco,
  sealDisco,
} from '../disco/disco-codec.js';
import { DiscoKeyring } from '../disco/disco-keyring.js';
import { ReplayGuard } from '../disco/replay-guard.js';
import { type DiscoLimits, discoLimits } from './disco-limits.js';
import {
  emptyProbeCounts,
  type LocalConditions,
  PathSelector,
  type PathSnapshot,
  type ProbeCounts,
  type Route,
} from './path-selector.js';
import type { PathTimers } from './path-timers.js';

export type DiscoSource =
  | { readonly via: 'relay'; readonly key: Buffer }
  | { readonly via: 'udp'; readonly address: string; readonly port: number };

export interface DiscoPeersOptions {
  readonly clock: Clock;
  /** This endpoint's WireGuard private key (the box key pairs are derived from it). */
  readonly privateKey: Uint8Array;
  sendRelay(peer: Buffer, datagram: Buffer): boolean;
  /** Absent: no UDP socket (`--egress 443-only`, or it could not be opened). */
  readonly sendUdp?: (datagram: Buffer, host: string, port: number) => boolean;
  onRouteChange(peer: Buffer, route: Route, remote: DiscoAddress | undefined): void;
  /** The first disco message from a peer was accepted: it speaks disco (its paths may be steered). */
  readonly onHeard?: (peer: Buffer) => void;
  /**
   * A pong to one of our UDP pings said where the ping came from as the peer saw it: our mapping towards that
   * peer (compared with STUN's, it shows whether the NAT maps per destination).
   */
  readonly onObserved?: (peer: Buffer, observed: DiscoAddress) => void;
  /** An ack of a path MTU probe (sendProbe) arrived over UDP: false when it answers no probe in flight. */
  readonly onProbeAck?: (peer: Buffer, txid: Buffer, size: number) => boolean;
  readonly conditions?: Partial<Omit<LocalConditions, 'udp'>>;
  readonly timers?: Partial<PathTimers>;
  /** Peers held at most (default 10,000): addPeer refuses more. */
  readonly maxPeers?: number;
  /** Least time between call-me-maybes to one peer, except when our candidates or the peer's change (default 5 s). */
  readonly callMeMaybeMinMs?: number;
  /** Our call-me-maybe is sent again this often (a peer that restarted learns it again; default 60 s). */
  readonly callMeMaybeRefreshMs?: number;
  /** Per-peer rate limits (disco-limits.ts); BAD_CONFIG for a value that is not a positive integer. */
  readonly limits?: Partial<DiscoLimits>;
  /**
   * Whether a peer's disco over UDP is answered now (absent: every peer's). Any other is dropped as `not-owner`
   * once it opened, before it is answered or noted (a relay replica that does not hold the peer's session).
   */
  readonly answersUdp?: (peer: Buffer) => boolean;
}

/** Why a peer's candidate address was left out: the address (candidate-address.ts), or the churn budget. */
export type CandidateDrop = CandidateRefusal | 'churn';

export const DEFAULT_DISCO_MAX_PEERS = 10_000;

/** The handle of one peer: its owner reports traffic through it (no lookup per datagram). */
export interface DiscoPeer {
  readonly key: Buffer;
  readonly selector: PathSelector;
  /** The selector's route now. */
  readonly route: Route;
  /** Application traffic within the selector's active window. */
  readonly active: boolean;
  /** A disco message from the peer was accepted: it speaks disco (an agent, not a stock WireGuard peer). */
  readonly heard: boolean;
  /** An application packet was sent to or received from the peer. */
  noteTraffic(): void;
}

interface PeerState extends DiscoPeer {
  /** The route the last onRouteChange reported (switches are counted against it). */
  lastRoute: Route;
  timer: TimerHandle | undefined;
  heard: boolean;
  lastCallMeMaybeAt: number;
  /** Whether our last call-me-maybe to the peer listed our candidates (we were probing). */
  announcedProbing: boolean;
  /** The peer's call-me-maybes we still handle now (the rest are dropped as rate-limited). */
  readonly callMeMaybeBudget: TokenBucket;
  /** The candidates of the peer's last call-me-maybe, as text (a change is answered at once). */
  peerCandidates: string | undefined;
}

export interface DiscoStats {
  received: number;
  sent: number;
  pings: number;
  pongs: number;
  callMeMaybes: number;
  /** Path MTU probes received (and answered), and acks to ours. */
  probes: number;
  probeAcks: number;
  /** Route changes to `direct` (upgrades), and from `direct` to `both` or `relayed` (fallbacks). */
  toDirect: number;
  fromDirect: number;
}

export class DiscoPeers {
  readonly dropped: Record<DiscoDropReason, number> = emptyDropCounts();
  readonly stats: DiscoStats = {
    received: 0,
    sent: 0,
    pings: 0,
    pongs: 0,
    callMeMaybes: 0,
    probes: 0,
    probeAcks: 0,
    toDirect: 0,
    fromDirect: 0,
  };
  /** Our disco pings to every peer, by carrier and outcome. */
  readonly pingOutcomes: ProbeCounts = emptyProbeCounts();
  /** Peers' candidate addresses left out, by reason (never pinged). */
  readonly candidatesRefused: Record<CandidateDrop, number> = { ...emptyRefusalCounts(), churn: 0 };
  readonly #options: DiscoPeersOptions;
  readonly #limits: DiscoLimits;
  #own = new OwnAddresses();
  readonly #clock: Clock;
  readonly #keyring: DiscoKeyring;
  readonly #guard: ReplayGuard;
  readonly #peers = new Map<string, PeerState>();
  readonly #maxPeers: number;
  #local: readonly DiscoAddress[] = [];
  #conditions: LocalConditions;
  #closed = false;

  constructor(o: DiscoPeersOptions) {
    this.#options = o;
    this.#clock = o.clock;
    this.#maxPeers = o.maxPeers ?? DEFAULT_DISCO_MAX_PEERS;
    this.#limits = discoLimits(o.limits);
    this.#keyring = new DiscoKeyring({ privateKey: o.privateKey, maxPeers: this.#maxPeers });
    this.#guard = new ReplayGuard({ clock: o.clock, maxSenders: this.#maxPeers });
    this.#conditions = {
      egress: 'any',
      policy: 'auto',
      stun: 'unknown',
      ...o.conditions,
      udp: o.sendUdp ? 'ok' : 'unavailable',
    };
  }

  get size(): number {
    return this.#peers.size;
  }

  get publicKey(): Buffer {
    return this.#keyring.publicKey;
  }

  /** The local conditions every peer's selector works under now. */
  get conditions(): LocalConditions {
    return this.#conditions;
  }

  peer(key: Buffer): DiscoPeer | undefined {
    return this.#peers.get(keyToBase64(key));
  }

  /** Starts path selection for a peer (or returns its handle); undefined when full or closed. */
  addPeer(key: Buffer): DiscoPeer | undefined {
    const id = keyToBase64(key);
    const known = this.#peers.get(id);
    if (known) return known;
    if (this.#closed || this.#peers.size >= this.#maxPeers) return undefined;
    const peerKey = Buffer.from(key);
    const state: PeerState = {
      key: peerKey,
      selector: new PathSelector({
        clock: this.#clock,
        conditions: this.#conditions,
        timers: this.#options.timers,
        counts: this.pingOutcomes,
        limits: this.#limits,
        onChurn: () => {
          this.candidatesRefused.churn++;
        },
        onRouteChange: () => this.#routeChanged(state),
      }),
      get route() {
        return state.selector.route;
      },
      get active() {
        return state.selector.active;
      },
      lastRoute: 'relayed',
      noteTraffic: () => {
        if (state.selector.noteTraffic()) this.#poll(state);
      },
      timer: undefined,
      heard: false,
      lastCallMeMaybeAt: Number.NEGATIVE_INFINITY,
      announcedProbing: false,
      callMeMaybeBudget: new TokenBucket({
        clock: this.#clock,
        burst: this.#limits.callMeMaybeBurst,
        intervalMs: this.#limits.callMeMaybeIntervalMs,
      }),
      peerCandidates: undefined,
    };
    this.#peers.set(id, state);
    this.#sendCallMeMaybe(state);
    this.#poll(state);
    return state;
  }

  removePeer(key: Buffer): boolean {
    const id = keyToBase64(key);
    const state = this.#peers.get(id);
    if (!state) return false;
    this.#clock.clearTimer(state.timer);
    this.#peers.delete(id);
    return true;
  }

  /** Our candidates changed: every peer hears of them now, and selectors that gave up try again. */
  setLocalCandidates(list: readonly DiscoAddress[]): void {
    const text = (l: readonly DiscoAddress[]) => l.map((a) => `${a.host}|${a.port}`).join(' ');
    const changed = text(list) !== text(this.#local);
    this.#local = [...list];
    for (const state of this.#peers.values()) {
      if (changed) state.selector.retry();
      this.#sendCallMeMaybe(state);
      this.#poll(state);
    }
  }

  /**
   * This node's own addresses (its UDP listen address, its public endpoint, its candidates): a peer's
   * call-me-maybe naming any of these hosts is never pinged there (candidate-address.ts).
   */
  setOwnAddresses(list: readonly DiscoAddress[]): void {
    this.#own = new OwnAddresses(list);
  }

  /** Applies to every peer at once (relay-only and 443-only stop UDP pings and drop direct routes). */
  setConditions(c: Partial<LocalConditions>): void {
    this.#conditions = { ...this.#conditions, ...c };
    for (const state of this.#peers.values()) {
      state.selector.setConditions(this.#conditions);
      this.#poll(state);
    }
  }

  /** How many peers are on each route now. */
  routes(): Record<Route, number> {
    const out: Record<Route, number> = { relayed: 0, both: 0, direct: 0 };
    for (const state of this.#peers.values()) out[state.selector.route]++;
    return out;
  }

  /** Addresses a peer is known at without its call-me-maybe (the hub's advertised UDP endpoint). */
  setConfigured(key: Buffer, list: readonly DiscoAddress[]): void {
    const state = this.#peers.get(keyToBase64(key));
    if (!state) return;
    state.selector.setConfigured(list);
    this.#poll(state);
  }

  /** Sends our call-me-maybe to the peer now (its WireGuard session just came up: it may have restarted). */
  announce(key: Buffer): void {
    const state = this.#peers.get(keyToBase64(key));
    if (state) this.#sendCallMeMaybe(state);
  }

  /**
   * The peer's direct path ends now (its relay connection moved to another relay replica, or ours to another
   * hub): see PathSelector.forgetPaths. Its candidates are heard again from its next call-me-maybe.
   */
  forgetPaths(key: Buffer): void {
    const state = this.#peers.get(keyToBase64(key));
    if (!state) return;
    state.peerCandidates = undefined;
    state.selector.forgetPaths();
    this.#poll(state);
  }

  /** The peer showed it does not hear us on the direct remote (see PathSelector.distrustRemote). */
  distrustRemote(key: Buffer): void {
    const state = this.#peers.get(keyToBase64(key));
    if (!state?.selector.distrustRemote()) return;
    this.#poll(state);
  }

  snapshot(key: Buffer): PathSnapshot | undefined {
    return this.#peers.get(keyToBase64(key))?.selector.snapshot();
  }

  /** One disco datagram (it starts with the disco magic) from the relay or the UDP socket. Never throws. */
  receive(datagram: Buffer, from: DiscoSource): void {
    this.stats.received++;
    const r = openDisco(datagram, {
      keyFor: (k) => (this.#peers.has(keyToBase64(k)) ? this.#keyring.keyFor(k) : null),
    });
    const reason = !r.ok
      ? r.reason
      : from.via === 'relay' && !from.key.equals(r.sender)
        ? 'sender-mismatch'
        : this.#guard.check(r.sender, r.message.txid, r.message.sentAt);
    const state = r.ok ? this.#peers.get(keyToBase64(r.sender)) : undefined;
    const notOwner = state && from.via === 'udp' && this.#options.answersUdp?.(state.key) === false;
    if (reason || !r.ok || !state || notOwner) {
      if (notOwner && !reason) return void this.dropped['not-owner']++;
      this.dropped[reason ?? 'unknown-sender']++;
      return;
    }
    if (!state.heard) {
      state.heard = true;
      this.#options.onHeard?.(state.key);
    }
    const m = r.message;
    if (m.type === 'ping') this.#onPing(state, m.txid, from);
    else if (m.type === 'pong') this.#onPong(state, m.txid, from, m.observed);
    else if (m.type === 'call-me-maybe') this.#onCallMeMaybe(state, m.candidates, from);
    else this.#onProbe(state, m, from);
  }

  /** Sends a path MTU probe of `probe.size` bytes to the peer at `to` over UDP; false when it was not sent. */
  sendProbe(key: Buffer, to: DiscoAddress, probe: { txid: Buffer; size: number }): boolean {
    const state = this.#peers.get(keyToBase64(key));
    if (!state?.selector.udpAllowed) return false;
    const m: DiscoMessage = {
      type: 'probe',
      txid: probe.txid,
      sentAt: this.#clock.wallNow(),
      size: probe.size,
    };
    return this.#send(state, { via: 'udp', to }, m);
  }

  close(): void {
    this.#closed = true;
    for (const state of this.#peers.values()) this.#clock.clearTimer(state.timer);
    this.#peers.clear();
  }

  #routeChanged(state: PeerState): void {
    const route = state.selector.route;
    if (route === 'direct' && state.lastRoute !== 'direct') this.stats.toDirect++;
    if (route !== 'direct' && state.lastRoute === 'direct') this.stats.fromDirect++;
    state.lastRoute = route;
    this.#options.onRouteChange(state.key, route, state.selector.remote);
  }

  #onPing(state: PeerState, txid: Buffer, from: DiscoSource): void {
    this.stats.pings++;
    const sentAt = this.#clock.wallNow();
    if (from.via === 'relay') {
      this.#send(state, { via: 'relay' }, { type: 'pong', txid, sentAt });
      return;
    }
    if (!state.selector.udpAllowed) return; // relay-only / 443-only: no UDP, not even a pong
    const observed = { host: from.address, port: from.port };
    this.#send(state, { via: 'udp', to: observed }, { type: 'pong', txid, sentAt, observed });
    const refused = candidateRefusal(observed, { own: this.#own, observed: true });
    if (refused) this.candidatesRefused[refused]++;
    else state.selector.notePeerAddress(observed);
    this.#poll(state);
  }

  #onPong(state: PeerState, txid: Buffer, from: DiscoSource, observed: DiscoAddress | undefined): void {
    this.stats.pongs++;
    const arrived =
      from.via === 'relay'
        ? { via: 'relay' as const }
        : { via: 'udp' as const, to: { host: from.address, port: from.port } };
    if (!state.selector.pong(txid, arrived)) this.dropped['unexpected-pong']++;
    else if (observed && from.via === 'udp') this.#options.onObserved?.(state.key, observed);
    this.#arm(state);
  }

  /** A probe is answered with its size where it came from; an ack goes to the owner. Over UDP only. */
  #onProbe(state: PeerState, m: DiscoProbe | DiscoProbeAck, from: DiscoSource): void {
    if (from.via !== 'udp') {
      this.dropped['wrong-carrier']++;
      return;
    }
    if (m.type === 'probe-ack') {
      this.stats.probeAcks++;
      if (!this.#options.onProbeAck?.(state.key, m.txid, m.size)) this.dropped['unexpected-pong']++;
      return;
    }
    this.stats.probes++;
    if (!state.selector.udpAllowed) return;
    const ack: DiscoMessage = {
      type: 'probe-ack',
      txid: m.txid,
      sentAt: this.#clock.wallNow(),
      size: m.size,
    };
    this.#send(state, { via: 'udp', to: { host: from.address, port: from.port } }, ack);
  }

  #onCallMeMaybe(state: PeerState, candidates: readonly DiscoAddress[], from: DiscoSource): void {
    if (from.via !== 'relay') {
      this.dropped['wrong-carrier']++;
      return;
    }
    if (!state.callMeMaybeBudget.take()) {
      this.dropped['rate-limited']++;
      return;
    }
    this.stats.callMeMaybes++;
    const usable = this.#screen(candidates);
    // An empty list says the peer stopped using UDP; a list of refused addresses only changes nothing.
    if (candidates.length === 0 || usable.length > 0) state.selector.setCandidates(usable);
    // A new list (the peer restarted, its network changed, it gave up or tries again) is answered at once:
    // the peer may never have heard ours. The same list again only after callMeMaybeMinMs, so that two peers
    // never answer each other in a loop.
    const text = candidates.map((c) => `${c.host}|${c.port}`).join(' ');
    const changed = text !== state.peerCandidates;
    state.peerCandidates = text;
    if (changed || this.#clock.now() - state.lastCallMeMaybeAt >= (this.#options.callMeMaybeMinMs ?? 5_000))
      this.#sendCallMeMaybe(state);
    this.#poll(state);
  }

  /** The candidates that may be pinged; the others are counted by reason. */
  #screen(candidates: readonly DiscoAddress[]): DiscoAddress[] {
    return candidates.filter((c) => {
      const refused = candidateRefusal(c, { own: this.#own });
      if (refused) this.candidatesRefused[refused]++;
      return refused === null;
    });
  }

  /**
   * Our candidates, or none while we do not probe (UDP not allowed, or our selector gave up): the peer stops
   * (or starts) probing us too.
   */
  #sendCallMeMaybe(state: PeerState): void {
    state.lastCallMeMaybeAt = this.#clock.now();
    state.announcedProbing = state.selector.probing;
    const candidates = state.announcedProbing ? this.#local : [];
    const m: DiscoMessage = {
      type: 'call-me-maybe',
      txid: newTxid(),
      sentAt: this.#clock.wallNow(),
      candidates,
    };
    this.#send(state, { via: 'relay' }, m);
  }

  #send(
    state: PeerState,
    via: { via: 'relay' } | { via: 'udp'; to: DiscoAddress },
    m: DiscoMessage,
  ): boolean {
    const key = this.#keyring.keyFor(state.key);
    if (!key) return false;
    const datagram = sealDisco(m, { sender: this.#keyring.publicKey, key });
    const ok =
      via.via === 'relay'
        ? this.#options.sendRelay(state.key, datagram)
        : (this.#options.sendUdp?.(datagram, via.to.host, via.to.port) ?? false);
    if (ok) this.stats.sent++;
    return ok;
  }

  #poll(state: PeerState): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    for (const probe of state.selector.probesDue())
      this.#send(state, probe.target, { type: 'ping', txid: probe.txid, sentAt: this.#clock.wallNow() });
    if (
      state.selector.probing !== state.announcedProbing ||
      now - state.lastCallMeMaybeAt >= (this.#options.callMeMaybeRefreshMs ?? 60_000)
    )
      this.#sendCallMeMaybe(state);
    this.#arm(state);
  }

  #arm(state: PeerState): void {
    if (this.#closed || this.#peers.get(keyToBase64(state.key)) !== state) return;
    this.#clock.clearTimer(state.timer);
    const wait = Math.max(0, state.selector.nextWakeAt() - this.#clock.now());
    state.timer = this.#clock.setTimer(wait, () => this.#poll(state));
  }
}
