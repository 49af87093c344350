/**
 * Which path one peer's datagrams take, and which disco pings are due: a state machine on the injected
 * clock, no I/O. Its owner feeds it the peer's candidate addresses (call-me-maybe, and where the peer's
 * own pings came from), traffic, pongs, and the local conditions (policy, egress, UDP, STUN); it answers
 * with the route and the pings to send (each with a fresh txid, recorded as in flight).
 *
 * Routes:
 * - `relayed`: no direct remote. Candidates are pinged (fast while active or confirming, keepalive pace idle).
 * - `both`: a remote answered but is not trusted (yet, or any more): datagrams go direct and over the relay
 *   (WireGuard's replay window drops whichever copy arrives second). Its pings are fast.
 * - `direct`: the remote's last pong is within the trust window (trustMs while active, idle pace + trustMs
 *   when idle): datagrams go direct only.
 * A remote is dropped (back to `relayed`) when no pong came for its trust window + pingTimeoutMs.
 *
 * Hysteresis: each fallback from `direct` (trust expired under traffic) raises the answers required in a row
 * before `direct` again (1 + fallbacks, at most 1 + maxExtraStreak) and holds `direct` off for
 * 1 s x 2^(fallbacks-1) (at most holdDownMaxMs) after the fallback; stableMs of `direct` forgets them.
 *
 * Budgets (disco-limits.ts): new candidate addresses from the peer (call-me-maybe, peer-reflexive) and pings to
 * candidates nothing answered at yet are token buckets per selector, so however often the peer sends new lists, the
 * pings it causes stay within the budget; a ping without a token waits for the next one.
 *
 * Giving up: when STUN says UDP is blocked (`no-answer`) or the NAT maps per destination (`varies`), and no
 * UDP ping was ever answered by the end of the first attempts (the confirm window and a ping timeout after
 * it), the selector stops pinging over UDP (`probing` false): direct cannot work from here, and more pings
 * would only be spam. It tries again when something changes: new candidates, a ping from the peer over UDP
 * from a new address, a new STUN verdict, the policy allowing UDP again, or retry() (a network change).
 */
import type { Clock } from '../../clock.js';
import { TokenBucket } from '../../token-bucket.js';
import { type DiscoAddress, newTxid } from '../disco/disco-codec.js';
import { normalizeIp } from '../ip/ip-bytes.js';
import { DEFAULT_DISCO_LIMITS, type DiscoLimits } from './disco-limits.js';
import { type PathTimers, pathTimers } from './path-timers.js';
import { PendingPings } from './pending-pings.js';

export type Route = 'relayed' | 'both' | 'direct';
export type ProbeTarget = { readonly via: 'relay' } | { readonly via: 'udp'; readonly to: DiscoAddress };
export interface Probe {
  readonly txid: Buffer;
  readonly target: ProbeTarget;
}

/** Why a peer's traffic is not direct (shown while the route is not `direct`). */
export type RelayedReason =
  | '443-only' // --egress 443-only: no UDP at all
  | 'relay-only' // the cluster's path setting
  | 'udp-blocked' // no UDP socket, or neither STUN nor any candidate ever answered
  | 'no-stun-answer' // STUN unanswered (UDP answered at some point)
  | 'mapping-varies' // the NAT maps one socket to different ports per destination
  | 'no-candidates' // the peer sent no addresses to try
  | 'confirming' // a remote answered; waiting for the answers that make it trusted
  | 'direct-silent' // the direct path stopped answering; probing in the background
  | 'no-answer'; // candidates pinged, none answered yet

export interface LocalConditions {
  readonly egress: 'any' | '443-only';
  readonly policy: 'auto' | 'relay-only';
  readonly udp: 'ok' | 'unavailable';
  readonly stun: 'unknown' | 'ok' | 'no-answer' | 'varies';
}

export interface PathSnapshot {
  readonly route: Route;
  readonly remote?: DiscoAddress;
  readonly rttMs: { readonly direct?: number; readonly relayed?: number };
  /** Wall-clock ms of the last route or remote change. */
  readonly lastSwitchAt?: number;
  readonly reason?: RelayedReason;
  readonly candidates: number;
  readonly fallbacks: number;
}

/** Pings sent, answered and lost (unanswered within pingTimeoutMs, or forgotten past the cap), by carrier. */
export type ProbeCounts = Record<ProbeTarget['via'], { sent: number; answered: number; lost: number }>;

export function emptyProbeCounts(): ProbeCounts {
  return { relay: { sent: 0, answered: 0, lost: 0 }, udp: { sent: 0, answered: 0, lost: 0 } };
}

export interface PathSelectorOptions {
  readonly clock: Clock;
  readonly timers?: Partial<PathTimers>;
  readonly conditions?: Partial<LocalConditions>;
  /** Most candidate addresses held (call-me-maybe and peer-reflexive together); default 24. */
  readonly maxCandidates?: number;
  /** Most pings in flight; default 64. */
  readonly maxPending?: number;
  readonly newTxid?: () => Buffer;
  /** The route or the direct remote changed (called after the change). */
  readonly onRouteChange?: () => void;
  /** Where this selector's pings are counted (shared by the selectors of an endpoint). */
  readonly counts?: ProbeCounts;
  /**
   * The per-peer budgets of new candidates and of pings to candidates that never answered (disco-limits.ts;
   * default DEFAULT_DISCO_LIMITS).
   */
  readonly limits?: DiscoLimits;
  /** A new candidate address was left out: the new-candidate budget was spent (counted as churn). */
  readonly onChurn?: () => void;
}

interface Candidate {
  readonly address: DiscoAddress;
  readonly key: string;
  source: 'configured' | 'call-me-maybe' | 'peer-reflexive';
  /** peer-reflexive only: forgotten after this (monotonic ms). */
  expiresAt: number;
  lastPingAt: number;
  lastPongAt: number;
  rttMs: number | undefined;
  /** Answers in a row since the last lost ping. */
  streak: number;
}

const NEVER = Number.NEGATIVE_INFINITY;
const DEFAULT_CONDITIONS: LocalConditions = { egress: 'any', policy: 'auto', udp: 'ok', stun: 'unknown' };

function addressKey(a: DiscoAddress): string | null {
  const ip = normalizeIp(a.host);
  return ip && Number.isInteger(a.port) && a.port > 0 && a.port < 65_536 ? `${ip}|${a.port}` : null;
}

export class PathSelector {
  readonly #clock: Clock;
  readonly #timers: PathTimers;
  readonly #maxCandidates: number;
  readonly #newTxid: () => Buffer;
  readonly #onRouteChange: () => void;
  readonly #pending: PendingPings<ProbeTarget>;
  readonly #counts: ProbeCounts;
  readonly #onChurn: () => void;
  /** Addresses not held yet that may still be added (call-me-maybe and peer-reflexive ones). */
  readonly #newCandidates: TokenBucket;
  /** Pings to candidates that never answered (and are not configured). */
  readonly #unconfirmedPings: TokenBucket;
  readonly #candidates = new Map<string, Candidate>();
  #conditions: LocalConditions;
  #best: Candidate | undefined;
  #route: Route = 'relayed';
  #lastSwitchAt: number | undefined;
  #lastTrafficAt = NEVER;
  #wokeAt = NEVER;
  #confirmUntil = NEVER;
  #relayLastPingAt = NEVER;
  #relayRttMs: number | undefined;
  #fallbacks = 0;
  #lastFallbackAt = NEVER;
  #directSince = NEVER;
  #everAnsweredUdp = false;
  /** UDP pings stopped: the first attempts failed where direct cannot work (see the header). */
  #gaveUp = false;
  /** UDP pings sent since the selector last (re)started trying. */
  #udpPingsSinceStart = 0;
  /** When the route last became `both` (the remote untrusted). */
  #untrustedSince = NEVER;

  constructor(o: PathSelectorOptions) {
    this.#clock = o.clock;
    this.#timers = pathTimers(o.timers);
    this.#maxCandidates = Math.max(1, o.maxCandidates ?? 24);
    this.#pending = new PendingPings(o.maxPending ?? 64);
    this.#newTxid = o.newTxid ?? newTxid;
    this.#onRouteChange = o.onRouteChange ?? (() => {});
    this.#counts = o.counts ?? emptyProbeCounts();
    this.#onChurn = o.onChurn ?? (() => {});
    const limits = o.limits ?? DEFAULT_DISCO_LIMITS;
    this.#newCandidates = new TokenBucket({
      clock: o.clock,
      burst: limits.newCandidateBurst,
      intervalMs: limits.newCandidateIntervalMs,
    });
    this.#unconfirmedPings = new TokenBucket({
      clock: o.clock,
      burst: limits.unconfirmedPingBurst,
      intervalMs: limits.unconfirmedPingIntervalMs,
    });
    this.#conditions = { ...DEFAULT_CONDITIONS, ...o.conditions };
  }

  get route(): Route {
    return this.#route;
  }

  /** Traffic (noteTraffic) within activeMs: fast pacing and the short trust window. */
  get active(): boolean {
    return this.#trafficActive(this.#clock.now());
  }

  /** The direct remote while the route is `direct` or `both`. */
  get remote(): DiscoAddress | undefined {
    return this.#route === 'relayed' ? undefined : this.#best?.address;
  }

  /** UDP may be used: not 443-only, not relay-only, a socket. */
  get udpAllowed(): boolean {
    const c = this.#conditions;
    return c.egress === 'any' && c.policy === 'auto' && c.udp === 'ok';
  }

  /** UDP pings are sent: UDP is allowed and the selector has not given up (see the header). */
  get probing(): boolean {
    return this.udpAllowed && !this.#gaveUp;
  }

  /**
   * Applies at once: relay-only or 443-only drops the direct remote and stops UDP pings. A new STUN verdict
   * makes a selector that gave up try again.
   */
  setConditions(c: Partial<LocalConditions>): void {
    const wasAllowed = this.udpAllowed;
    const stunChanged = c.stun !== undefined && c.stun !== this.#conditions.stun;
    this.#conditions = { ...this.#conditions, ...c };
    // A new verdict after giving up, or STUN answering again (UDP passes again) while not direct: try now.
    const stunBack = stunChanged && c.stun === 'ok' && this.#route !== 'direct';
    if (stunChanged && (this.#gaveUp || stunBack) && this.udpAllowed) this.#startConfirming();
    if (wasAllowed === this.udpAllowed) return;
    if (this.udpAllowed) this.#startConfirming();
    this.#evaluate();
  }

  /** Tries the candidates again now (the network changed), also after giving up. */
  retry(): void {
    if (this.udpAllowed) this.#startConfirming();
  }

  /**
   * The peer's candidates (its call-me-maybe): replaces the earlier list, keeps what is known of addresses
   * still listed (a remote it named before and no longer lists is dropped at once: route `relayed`), and pings them all at once (both sides do: hole punching), unless
   * the list brought nothing new while the route is direct or after giving up (a periodic repeat costs no
   * burst). An empty list says the peer does not use UDP now (relay-only, 443-only, or it gave up): every
   * address but the configured ones is forgotten at once, the direct remote too (the peer no longer answers
   * there, and an idle peer's trust window would keep it for half a minute).
   */
  setCandidates(list: readonly DiscoAddress[]): void {
    if (list.length === 0) {
      this.#peerStoppedUdp();
      return;
    }
    const listed = new Set<string>();
    let added = false;
    for (const a of list) {
      const key = addressKey(a);
      if (!key || listed.has(key) || listed.size >= this.#maxCandidates) continue;
      listed.add(key);
      const known = this.#candidates.get(key);
      const c = known ?? this.#addCandidate(a, key, true);
      added ||= !known && c !== undefined;
      if (c && c.source !== 'configured') c.source = 'call-me-maybe';
    }
    for (const [key, c] of this.#candidates)
      if (c.source === 'call-me-maybe' && !listed.has(key)) this.#candidates.delete(key);
    // The remote came from an earlier list and this one no longer names it: the peer no longer answers there
    // (it moved to another relay replica, or its address changed): dropped at once, not at the end of its trust.
    const best = this.#best;
    if (best && best.source === 'call-me-maybe' && !listed.has(best.key)) this.#dropRemote();
    if (added || (this.#route !== 'direct' && !this.#gaveUp)) this.#startConfirming();
  }

  /**
   * The peer's direct path ends now, as when its relay connection moved to another relay replica (whose UDP
   * endpoints differ, and whose session is a new one): the remote and every candidate the peer named or pinged
   * from are forgotten, the route is `relayed` at once, and the configured candidates are tried again from the
   * start. Not a fallback: no hold-down follows.
   */
  forgetPaths(): void {
    for (const [key, c] of this.#candidates) if (c.source !== 'configured') this.#candidates.delete(key);
    for (const c of this.#candidates.values()) {
      c.lastPongAt = NEVER;
      c.streak = 0;
      c.rttMs = undefined;
    }
    this.#dropRemote();
    if (this.udpAllowed) this.#startConfirming();
  }

  /** The remote is forgotten and the route is `relayed` now (no fallback counted). */
  #dropRemote(): void {
    this.#best = undefined;
    this.#setRoute('relayed', this.#clock.now());
  }

  #peerStoppedUdp(): void {
    for (const [key, c] of this.#candidates) if (c.source !== 'configured') this.#candidates.delete(key);
    if (!this.#best || this.#best.source === 'configured') return;
    this.#dropRemote();
  }

  /**
   * Addresses the peer is known at without asking it (the hub's advertised UDP endpoint): candidates a
   * call-me-maybe never removes. Replaces the earlier configured list.
   */
  setConfigured(list: readonly DiscoAddress[]): void {
    const keep = new Set<string>();
    for (const a of list) {
      const key = addressKey(a);
      const c = key ? (this.#candidates.get(key) ?? this.#addCandidate(a, key, false)) : undefined;
      if (!c || !key) continue;
      c.source = 'configured';
      keep.add(key);
    }
    for (const [key, c] of this.#candidates)
      if (c.source === 'configured' && !keep.has(key) && c !== this.#best) this.#candidates.delete(key);
    this.#startConfirming();
  }

  /**
   * An authenticated ping from the peer arrived over UDP from `from`: a peer-reflexive candidate. Only a pong
   * to one of our pings ever makes an address the direct remote.
   */
  notePeerAddress(from: DiscoAddress): void {
    if (!this.udpAllowed) return;
    const key = addressKey(from);
    if (!key) return;
    const now = this.#clock.now();
    const known = this.#candidates.get(key);
    const c = known ?? this.#addCandidate(from, key, true);
    if (!c) return;
    if (c.source === 'peer-reflexive') c.expiresAt = now + this.#timers.peerReflexiveTtlMs;
    if (known) return;
    if (this.#gaveUp) this.#startConfirming();
    else this.#confirmUntil = Math.max(this.#confirmUntil, now + this.#timers.confirmMs);
  }

  /**
   * The peer showed it does not hear us on the direct remote (it initiated a WireGuard handshake over the
   * relay, as after a restart with a new UDP port): while the route is `direct`, the remote's past answers
   * stop counting. The route becomes `both`, so replies reach the peer over the relay too; the remote is
   * pinged at once and is `direct` again at its next answer (this is no fallback: no hold-down), dropped
   * after a ping timeout without one, and replaced by any other candidate that answers first. True when
   * the route changed (poll now).
   */
  distrustRemote(): boolean {
    const best = this.#best;
    if (!best || this.#route !== 'direct') return false;
    const now = this.#clock.now();
    best.lastPongAt = NEVER;
    best.lastPingAt = NEVER;
    best.streak = 0;
    this.#confirmUntil = Math.max(this.#confirmUntil, now + this.#timers.confirmMs);
    this.#setRoute('both', now);
    return true;
  }

  /** A datagram was sent to or received from the peer. True when this woke an idle peer: poll now. */
  noteTraffic(): boolean {
    const now = this.#clock.now();
    const woke = now - this.#lastTrafficAt >= this.#timers.activeMs;
    this.#lastTrafficAt = now;
    if (!woke) return false;
    this.#wokeAt = now;
    if (this.#best) this.#best.lastPingAt = NEVER;
    this.#evaluate();
    return true;
  }

  /** The pings due now, each recorded as in flight. */
  probesDue(): Probe[] {
    this.#evaluate();
    const now = this.#clock.now();
    const out: Probe[] = [];
    if (now - this.#relayLastPingAt >= this.#relayInterval(now)) {
      this.#relayLastPingAt = now;
      out.push(this.#record({ via: 'relay' }, now));
    }
    if (!this.probing) return out;
    for (const c of this.#candidates.values()) {
      if (now - c.lastPingAt < this.#intervalFor(c, now)) continue;
      // Waits for the budget's next token (nextWakeAt): the peer named the address, nothing answered there yet.
      if (this.#unconfirmed(c) && !this.#unconfirmedPings.take()) continue;
      c.lastPingAt = now;
      this.#udpPingsSinceStart++;
      out.push(this.#record({ via: 'udp', to: c.address }, now));
    }
    return out;
  }

  /**
   * A pong arrived with `txid`, over the relay or over UDP from `from`. True when it answers a ping in
   * flight sent that same way (else it is dropped by the caller as unexpected).
   */
  pong(txid: Buffer, arrived: ProbeTarget): boolean {
    const ping = this.#pending.take(txid.toString('hex'));
    if (!ping) return false;
    const now = this.#clock.now();
    if (ping.target.via !== arrived.via) return false;
    if (ping.target.via === 'relay') {
      this.#counts.relay.answered++;
      this.#relayRttMs = now - ping.sentAt;
      return true;
    }
    const key = addressKey(ping.target.to);
    if (arrived.via !== 'udp' || !key || key !== addressKey(arrived.to)) return false;
    this.#counts.udp.answered++;
    const c = this.#candidates.get(key);
    if (c) this.#answered(c, now - ping.sentAt, now);
    return true;
  }

  /** Applies timeouts (lost pings, trust, a silent remote); call at nextWakeAt(). */
  tick(): void {
    this.#evaluate();
  }

  /** When (monotonic ms) the selector next has something to do: pings due or a window ending. */
  nextWakeAt(): number {
    const now = this.#clock.now();
    let at = this.#relayLastPingAt + this.#relayInterval(now);
    const oldest = this.#pending.oldestSentAt;
    if (oldest !== undefined) at = Math.min(at, oldest + this.#timers.pingTimeoutMs + 1);
    if (!this.probing) return at;
    const givesUpAt = this.#givesUpAt();
    if (givesUpAt !== undefined) at = Math.min(at, givesUpAt + 1);
    for (const c of this.#candidates.values()) at = Math.min(at, this.#pingDueAt(c, now));
    const best = this.#best;
    if (best)
      at = Math.min(
        at,
        (this.#route === 'direct' ? this.#trustEndsAt(best, now) : this.#dropAt(best, now)) + 1,
      );
    return Math.max(at, now);
  }

  snapshot(): PathSnapshot {
    this.#evaluate();
    const best = this.#best;
    return {
      route: this.#route,
      remote: this.remote,
      rttMs: {
        direct: this.#route === 'relayed' ? undefined : best?.rttMs,
        relayed: this.#relayRttMs,
      },
      lastSwitchAt: this.#lastSwitchAt,
      reason: this.#route === 'direct' ? undefined : this.#reason(),
      candidates: this.#candidates.size,
      fallbacks: this.#fallbacks,
    };
  }

  /**
   * Holds a new candidate; undefined when there is no room, or (`fromPeer`: an address the peer named or pinged
   * from, not a configured one) when the new-candidate budget is spent.
   */
  #addCandidate(address: DiscoAddress, key: string, fromPeer: boolean): Candidate | undefined {
    if (this.#candidates.size >= this.#maxCandidates && !this.#evictReflexive()) return undefined;
    if (fromPeer && !this.#newCandidates.take()) {
      this.#onChurn();
      return undefined;
    }
    const c: Candidate = {
      address: { host: normalizeIp(address.host) ?? address.host, port: address.port },
      key,
      source: 'peer-reflexive',
      expiresAt: Number.POSITIVE_INFINITY,
      lastPingAt: NEVER,
      lastPongAt: NEVER,
      rttMs: undefined,
      streak: 0,
    };
    this.#candidates.set(key, c);
    return c;
  }

  /** Frees a place by forgetting the oldest peer-reflexive candidate that is not the remote. */
  #evictReflexive(): boolean {
    for (const [key, c] of this.#candidates) {
      if (c.source !== 'peer-reflexive' || c === this.#best) continue;
      this.#candidates.delete(key);
      return true;
    }
    return false;
  }

  /** A candidate nothing ever answered at, that no configuration vouches for: its pings are budgeted. */
  #unconfirmed(c: Candidate): boolean {
    return c.lastPongAt === NEVER && c.source !== 'configured';
  }

  /** When the candidate's next ping is due, and (budgeted) has a token for it. */
  #pingDueAt(c: Candidate, now: number): number {
    const due = c.lastPingAt + this.#intervalFor(c, now);
    return this.#unconfirmed(c) ? Math.max(due, this.#unconfirmedPings.nextAt()) : due;
  }

  #startConfirming(): void {
    this.#confirmUntil = this.#clock.now() + this.#timers.confirmMs;
    this.#gaveUp = false;
    this.#udpPingsSinceStart = 0;
    for (const c of this.#candidates.values()) c.lastPingAt = NEVER;
  }

  /**
   * When the selector gives up if nothing changes (the end of the first attempts), or undefined while it
   * would not: some UDP answered once, a remote is held, STUN does not say direct is hopeless, or no UDP
   * ping went out yet.
   */
  #givesUpAt(): number | undefined {
    const stun = this.#conditions.stun;
    if (this.#gaveUp || this.#everAnsweredUdp || this.#best || this.#udpPingsSinceStart === 0)
      return undefined;
    if (stun !== 'no-answer' && stun !== 'varies') return undefined;
    return this.#confirmUntil + this.#timers.pingTimeoutMs;
  }

  #record(target: ProbeTarget, now: number): Probe {
    const txid = this.#newTxid();
    this.#counts[target.via].sent++;
    const lost = this.#pending.add({ txid: txid.toString('hex'), target, sentAt: now });
    if (lost) this.#lost(lost.target);
    return { txid, target };
  }

  #lost(target: ProbeTarget): void {
    this.#counts[target.via].lost++;
    if (target.via !== 'udp') return;
    const key = addressKey(target.to);
    const c = key ? this.#candidates.get(key) : undefined;
    if (c) c.streak = 0;
  }

  #trafficActive(now: number): boolean {
    return now - this.#lastTrafficAt < this.#timers.activeMs;
  }

  #busy(now: number): boolean {
    return this.#trafficActive(now) || now < this.#confirmUntil;
  }

  #trustWindow(now: number): number {
    return this.#trafficActive(now) ? this.#timers.trustMs : this.#timers.idlePingMs + this.#timers.trustMs;
  }

  #relayInterval(now: number): number {
    return this.#busy(now) ? this.#timers.relayPingMs : this.#timers.idlePingMs;
  }

  #intervalFor(c: Candidate, now: number): number {
    if (!this.#busy(now)) {
      if (this.#route !== 'direct' && c === this.#best) return this.#timers.directPingMs;
      return this.#route === 'direct' ? this.#timers.idlePingMs : this.#retryInterval(c);
    }
    if (c === this.#best) return this.#timers.directPingMs;
    return this.#route === 'direct' ? this.#timers.backgroundPingMs : this.#timers.candidatePingMs;
  }

  /**
   * An idle peer off the direct path pings at keepalive pace, except after a fallback: then each candidate's
   * next ping waits half as long as its last one came after the fallback (at least 2 s: about 2, 2, 2, 3, 4.5,
   * 7, 10, 15, 22 s, then keepalive pace), so a path that was down for a moment is found again within half that
   * moment again, and one that stays down costs a dozen pings more.
   */
  #retryInterval(c: Candidate): number {
    const idle = this.#timers.idlePingMs;
    if (this.#fallbacks === 0) return idle;
    if (c.lastPingAt < this.#lastFallbackAt) return this.#timers.candidatePingMs;
    return Math.min(idle, Math.max(this.#timers.candidatePingMs, (c.lastPingAt - this.#lastFallbackAt) / 2));
  }

  #answered(c: Candidate, rttMs: number, now: number): void {
    c.lastPongAt = now;
    c.rttMs = c.rttMs === undefined ? rttMs : Math.round((c.rttMs * 7 + rttMs * 3) / 10);
    c.streak++;
    this.#everAnsweredUdp = true;
    if (!this.udpAllowed) return;
    const best = this.#best;
    if (!best || (c !== best && this.#better(c, best, now))) {
      this.#best = c;
      if (this.#route !== 'relayed') this.#switched();
    }
    if (c !== this.#best) return;
    if (this.#route !== 'direct' && this.#upgradeAllowed(c, now)) this.#setRoute('direct', now);
    else if (this.#route === 'relayed') this.#setRoute('both', now);
  }

  /** `c` replaces the remote when the remote is no longer trusted, or `c` is clearly faster. */
  #better(c: Candidate, best: Candidate, now: number): boolean {
    if (now - best.lastPongAt > this.#trustWindow(now)) return true;
    if (c.rttMs === undefined || best.rttMs === undefined) return false;
    return c.rttMs * 10 < best.rttMs * 8 && best.rttMs - c.rttMs >= 1;
  }

  #requiredStreak(): number {
    return 1 + Math.min(this.#fallbacks, this.#timers.maxExtraStreak);
  }

  #upgradeAllowed(c: Candidate, now: number): boolean {
    if (c.streak < this.#requiredStreak()) return false;
    if (this.#fallbacks === 0) return true;
    const hold = Math.min(1_000 * 2 ** (this.#fallbacks - 1), this.#timers.holdDownMaxMs);
    return now >= this.#lastFallbackAt + hold;
  }

  #evaluate(): void {
    const now = this.#clock.now();
    for (const p of this.#pending.expire(now - this.#timers.pingTimeoutMs)) this.#lost(p.target);
    this.#expireReflexive(now);
    if (!this.udpAllowed) {
      this.#best = undefined;
      this.#setRoute('relayed', now);
      return;
    }
    const givesUpAt = this.#givesUpAt();
    if (givesUpAt !== undefined && now >= givesUpAt) this.#gaveUp = true;
    if (this.#route === 'direct' && now - this.#directSince >= this.#timers.stableMs) this.#fallbacks = 0;
    const best = this.#best;
    if (!best) return;
    if (now > this.#dropAt(best, now)) {
      this.#best = undefined;
      if (this.#route === 'direct') this.#noteFallback(now);
      this.#setRoute('relayed', now);
    } else if (this.#route === 'direct' && now > this.#trustEndsAt(best, now)) {
      if (now - this.#wokeAt >= this.#timers.trustMs) this.#noteFallback(now);
      best.streak = 0;
      this.#setRoute('both', now);
    }
  }

  /**
   * A peer that wakes from idle pings its remote at once: the remote keeps its trust for trustMs after the wake
   * so that the answer can come, or the route would go to `both` and back at every wake (a switch each time).
   */
  #trustEndsAt(best: Candidate, now: number): number {
    return Math.max(best.lastPongAt + this.#trustWindow(now), this.#wokeAt + this.#timers.trustMs);
  }

  /** No answer by then (trust over, then a ping timeout): the remote is dropped. */
  #dropAt(best: Candidate, now: number): number {
    const untrusted = this.#route === 'direct' ? now : Math.max(this.#untrustedSince, best.lastPongAt);
    return Math.max(this.#trustEndsAt(best, now), untrusted) + this.#timers.pingTimeoutMs;
  }

  #noteFallback(now: number): void {
    this.#fallbacks++;
    this.#lastFallbackAt = now;
  }

  #expireReflexive(now: number): void {
    for (const [key, c] of this.#candidates)
      if (c.source === 'peer-reflexive' && c.expiresAt <= now && c !== this.#best)
        this.#candidates.delete(key);
  }

  #setRoute(route: Route, now: number): void {
    if (route === this.#route) return;
    if (route === 'direct') this.#directSince = now;
    if (route === 'both') this.#untrustedSince = now;
    this.#route = route;
    this.#switched();
  }

  #switched(): void {
    this.#lastSwitchAt = this.#clock.wallNow();
    this.#onRouteChange();
  }

  #reason(): RelayedReason {
    const c = this.#conditions;
    if (c.egress === '443-only') return '443-only';
    if (c.policy === 'relay-only') return 'relay-only';
    if (c.udp === 'unavailable') return 'udp-blocked';
    if (this.#route === 'both') return 'confirming';
    if (c.stun === 'no-answer') return this.#everAnsweredUdp ? 'no-stun-answer' : 'udp-blocked';
    if (c.stun === 'varies') return 'mapping-varies';
    if (this.#candidates.size === 0) return 'no-candidates';
    if (this.#fallbacks > 0) return 'direct-silent';
    return 'no-answer';
  }
}
