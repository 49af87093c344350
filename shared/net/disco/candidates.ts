/**
 * A node's candidate addresses for the direct path: its local interface addresses (local-candidates.ts)
 * and its reflexive address, the mapping its NAT gives the tunnel's UDP socket as STUN servers see it.
 * STUN goes out through the tunnel's own socket (`send`), and the owner hands the answers back
 * (`receiveStun`), so the mapping is the one WireGuard's datagrams get.
 *
 * Refreshed every `refreshMs` (20 s: under the common 30 s NAT mapping timeout, which also keeps the
 * mapping open) and at once when the interface list changes (checked every `interfaceCheckMs`) or the owner
 * calls refresh(). With two or more STUN servers (or two ports of one), answers that differ mean the NAT maps
 * the socket differently per destination: hole punching will not work with it (`varies`). A round no server
 * answered (UDP blocked) waits twice as long for the next, up to 16 x `refreshMs` (5 min 20 s by default), so
 * a network without UDP gets next to no STUN traffic; an answer or a network change ends the back-off. Such a
 * round keeps the last reflexive address listed (the mapping did not move because STUN went unanswered); a
 * network change forgets it.
 * `onChange` hears of every change of the candidate list or the STUN verdict.
 */
import { randomBytes } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Clock, TimerHandle } from '../../clock.js';
import { bytesToIp, normalizeIp } from '../ip/ip-bytes.js';
import { decodeMappedAddress, encodeBindingRequest, isStunBindingSuccess } from '../stun/stun-codec.js';
import { DISCO_MAX_CANDIDATES, type DiscoAddress } from './disco-codec.js';
import { type InterfaceList, interfaceSignature, localCandidates } from './local-candidates.js';

/** A STUN server by IP literal and port (names are resolved by the caller). */
export interface StunServer {
  readonly host: string;
  readonly port: number;
}

/** unknown: no STUN server; ok: answered (alike); no-answer: none answered; varies: answers differ. */
export type StunVerdict = 'unknown' | 'ok' | 'no-answer' | 'varies';

export interface GatheredCandidates {
  /** Reflexive first, then local; at most DISCO_MAX_CANDIDATES (one call-me-maybe). */
  readonly candidates: readonly DiscoAddress[];
  readonly reflexive?: DiscoAddress;
  readonly stun: StunVerdict;
}

export interface CandidateGathererOptions {
  readonly clock: Clock;
  /** Sends one datagram on the tunnel's UDP socket; false when it was dropped. */
  send(datagram: Buffer, host: string, port: number): boolean;
  /** The address the socket is bound to, and its port. */
  readonly bindAddress: string;
  readonly port: number;
  readonly stunServers: readonly StunServer[];
  readonly interfaces?: () => InterfaceList;
  readonly refreshMs?: number;
  readonly interfaceCheckMs?: number;
  /** When, after a round starts, each request is (re)sent; default 0, 500, 1,500 ms. */
  readonly stunSendAtMs?: readonly number[];
  /** A round with no answer by then: `no-answer` (default 3 s). */
  readonly stunTimeoutMs?: number;
  readonly newTxid?: () => Buffer;
  onChange(gathered: GatheredCandidates): void;
}

export const DEFAULT_CANDIDATE_REFRESH_MS = 20_000;
export const DEFAULT_INTERFACE_CHECK_MS = 5_000;
export const DEFAULT_STUN_TIMEOUT_MS = 3_000;
const DEFAULT_STUN_SEND_AT_MS = [0, 500, 1_500];
/** The back-off after unanswered rounds stops doubling here (x16). */
const MAX_BACKOFF_DOUBLINGS = 4;

interface Request {
  readonly server: StunServer;
  readonly txid: Buffer;
  mapped?: DiscoAddress;
}

const sameAddress = (a: DiscoAddress, b: DiscoAddress) => a.host === b.host && a.port === b.port;

export class CandidateGatherer {
  readonly #options: CandidateGathererOptions;
  readonly #interfaces: () => InterfaceList;
  readonly #servers: StunServer[];
  #round: Request[] = [];
  #roundTimers: TimerHandle[] = [];
  #refreshTimer: TimerHandle | undefined;
  #interfaceTimer: TimerHandle | undefined;
  #signature = '';
  #local: DiscoAddress[] = [];
  #reflexive: DiscoAddress | undefined;
  #stun: StunVerdict = 'unknown';
  #emitted = '';
  #running = false;
  /** Rounds in a row no server answered. */
  #unanswered = 0;

  constructor(o: CandidateGathererOptions) {
    this.#options = o;
    this.#interfaces = o.interfaces ?? networkInterfaces;
    this.#servers = o.stunServers.flatMap((s) => {
      const host = normalizeIp(s.host);
      return host ? [{ host, port: s.port }] : [];
    });
  }

  get current(): GatheredCandidates {
    const candidates = [...(this.#reflexive ? [this.#reflexive] : []), ...this.#local]
      .filter((c, i, all) => all.findIndex((d) => sameAddress(c, d)) === i)
      .slice(0, DISCO_MAX_CANDIDATES);
    return { candidates, reflexive: this.#reflexive, stun: this.#stun };
  }

  /** Gathers now and keeps gathering until stop(). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#checkInterfaces(true);
    this.#emit();
    this.refresh();
  }

  stop(): void {
    this.#running = false;
    this.#endRound();
    this.#options.clock.clearTimer(this.#refreshTimer);
    this.#options.clock.clearTimer(this.#interfaceTimer);
  }

  /** A STUN round now (the network may have changed); the periodic refresh restarts from here. */
  refresh(): void {
    if (!this.#running) return;
    this.#endRound();
    const clock = this.#options.clock;
    this.#armRefresh();
    if (this.#servers.length === 0) {
      this.#emit();
      return;
    }
    const newTxid = this.#options.newTxid ?? (() => randomBytes(12));
    this.#round = this.#servers.map((server) => ({ server, txid: newTxid() }));
    for (const at of this.#options.stunSendAtMs ?? DEFAULT_STUN_SEND_AT_MS) {
      if (at <= 0) this.#sendUnanswered();
      else this.#roundTimers.push(clock.setTimer(at, () => this.#sendUnanswered()));
    }
    this.#roundTimers.push(
      clock.setTimer(this.#options.stunTimeoutMs ?? DEFAULT_STUN_TIMEOUT_MS, () => this.#finish()),
    );
  }

  /**
   * A STUN Binding success that arrived on the socket. True when it answers a request of the current round
   * (from the server it was sent to, with its txid); anything else is false and changes nothing.
   */
  receiveStun(datagram: Buffer, from: { readonly address: string; readonly port: number }): boolean {
    if (!isStunBindingSuccess(datagram)) return false;
    const host = normalizeIp(from.address);
    const txid = datagram.subarray(8, 20);
    const req = this.#round.find(
      (r) =>
        r.mapped === undefined &&
        r.server.host === host &&
        r.server.port === from.port &&
        r.txid.equals(txid),
    );
    const mapped = req ? decodeMappedAddress(datagram) : null;
    const mappedHost = mapped ? normalizeIp(stunAddressText(mapped.address)) : null;
    if (!req || !mapped || !mappedHost || mapped.port === 0) return false;
    req.mapped = { host: mappedHost, port: mapped.port };
    if (this.#round.every((r) => r.mapped !== undefined)) this.#finish();
    return true;
  }

  #sendUnanswered(): void {
    for (const r of this.#round)
      if (r.mapped === undefined)
        this.#options.send(encodeBindingRequest(r.txid), r.server.host, r.server.port);
  }

  #finish(): void {
    const answers = this.#round.flatMap((r) => (r.mapped ? [r.mapped] : []));
    this.#endRound();
    const first = answers[0];
    this.#unanswered = first ? 0 : this.#unanswered + 1;
    if (!first) this.#armRefresh();
    // A round nobody answered leaves the last mapping listed: a STUN outage (or UDP dropped for a while) does not
    // move the NAT's mapping, and a peer that still knows it can reach us the moment UDP passes again.
    if (first) this.#reflexive = first;
    this.#stun = !first ? 'no-answer' : answers.every((a) => sameAddress(a, first)) ? 'ok' : 'varies';
    this.#emit();
  }

  /** The next round: refreshMs from now, or longer after unanswered rounds. */
  #armRefresh(): void {
    const clock = this.#options.clock;
    const backoff = 2 ** Math.min(this.#unanswered, MAX_BACKOFF_DOUBLINGS);
    clock.clearTimer(this.#refreshTimer);
    this.#refreshTimer = clock.setTimer(
      (this.#options.refreshMs ?? DEFAULT_CANDIDATE_REFRESH_MS) * backoff,
      () => this.refresh(),
    );
  }

  #endRound(): void {
    for (const t of this.#roundTimers) this.#options.clock.clearTimer(t);
    this.#roundTimers = [];
    this.#round = [];
  }

  #checkInterfaces(first = false): void {
    const clock = this.#options.clock;
    this.#interfaceTimer = clock.setTimer(this.#options.interfaceCheckMs ?? DEFAULT_INTERFACE_CHECK_MS, () =>
      this.#checkInterfaces(),
    );
    const list = this.#interfaces();
    const signature = interfaceSignature(list);
    if (signature === this.#signature) return;
    this.#signature = signature;
    this.#local = localCandidates(list, this.#options.bindAddress, this.#options.port);
    this.#unanswered = 0;
    // Another network: the old mapping means nothing there.
    this.#reflexive = undefined;
    if (first) return;
    this.#emit();
    this.refresh();
  }

  #emit(): void {
    const now = this.current;
    const text = `${now.stun} ${now.candidates.map((c) => `${c.host}|${c.port}`).join(' ')}`;
    if (text === this.#emitted) return;
    this.#emitted = text;
    this.#options.onChange(now);
  }
}

/** A STUN address's 4 or 16 bytes as text (IPv4 dotted). */
function stunAddressText(address: Buffer): string {
  return address.length === 4 ? [...address].join('.') : bytesToIp(address);
}
