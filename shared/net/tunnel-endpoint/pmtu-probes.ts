/**
 * The path MTU searches of a tunnel endpoint's direct paths, one per peer whose route uses its direct path
 * (pmtu-search.ts): each runs on its own timer, sends its padded probes to the path's remote through
 * `sendProbe` (sealed disco `probe` messages over UDP), hears the acks, and sets the direct path's MTU when
 * its search raises it or a black hole drops it. A path that moves to another remote (roaming) starts over at
 * the base; so does one whose search is stopped (the route went back to the relay). Entries exist only for
 * peers the endpoint holds (the device's maxPeers caps them) and go with the peer (TunnelEndpoint.removePeer).
 *
 * Sizes: the base is a 1,500-byte IP packet; the steps above it are IP packets of PMTU_OUTER_STEPS bytes;
 * each less PMTU_IP_UDP_HEADROOM (an IPv6 + UDP header: the same datagram fits over IPv4 or IPv6). The
 * ceiling is the first hop's MTU (first-hop-mtu.ts) less the IP and UDP headers. Whether a size beyond that
 * hop arrives is the probe's to find: on a socket with don't-fragment (the GSO socket) a router whose next
 * link is smaller drops it, so only sizes the whole path carries are acknowledged; on node:dgram, which
 * cannot set it, a router fragments it instead. Where the first hop is unknown (IPv6) the search runs only
 * with don't-fragment.
 */
import type { Clock, TimerHandle } from '../../clock.js';
import { keyToBase64 } from '../../keys.js';
import { DISCO_MAX_PROBE_LEN } from '../disco/disco-codec.js';
import type { DirectPath } from './direct-path.js';
import { firstHopMtu } from './first-hop-mtu.js';
import {
  DEFAULT_PMTU_TIMERS,
  type PmtuProbe,
  PmtuSearch,
  type PmtuStats,
  type PmtuTimers,
} from './pmtu-search.js';

/** IP packet sizes tried above 1,500: jumbo frames, then steps up to what loopback carries. */
export const PMTU_OUTER_STEPS: readonly number[] = [9_000, 16_384, 32_768, 65_000];
/** An IPv6 header and a UDP header: datagram = IP packet - this. */
export const PMTU_IP_UDP_HEADROOM = 48;
const IPV4_UDP_HEADROOM = 28;

export interface PmtuProbesOptions {
  readonly clock: Clock;
  /** Datagram size every direct path starts at (DEFAULT_DIRECT_MTU). */
  readonly base: number;
  readonly timers?: Partial<PmtuTimers>;
  /** Datagram sizes to try above the base (default: PMTU_OUTER_STEPS less PMTU_IP_UDP_HEADROOM). */
  readonly steps?: readonly number[];
  /** The MTU of the interface datagrams to `host` leave by (default firstHopMtu). */
  readonly firstHopMtu?: (host: string) => number | undefined;
  /**
   * The socket sets don't-fragment (udp-transport.ts): a probe larger than the path carries is lost, never
   * fragmented, so the search may go beyond a first hop it cannot read (IPv6, other route tables).
   */
  readonly dontFragment?: () => boolean;
  sendProbe(peer: Buffer, to: { host: string; port: number }, probe: PmtuProbe): boolean;
  /** A peer's direct path MTU changed (after direct.setMtu). */
  onMtuChange(peer: Buffer, direct: DirectPath): void;
}

interface Entry {
  readonly key: Buffer;
  readonly direct: DirectPath;
  readonly remote: string;
  readonly search: PmtuSearch;
  lastSent: number;
  timer: TimerHandle | undefined;
}

export class PmtuProbes {
  readonly #options: PmtuProbesOptions;
  readonly #steps: readonly number[];
  readonly #entries = new Map<string, Entry>();
  /** Counters of the searches that ended, and the running ones (stats()). */
  readonly #ended: PmtuStats = { probes: 0, acks: 0, lost: 0, raised: 0, blackHoles: 0 };

  constructor(o: PmtuProbesOptions) {
    this.#options = o;
    this.#steps = o.steps ?? PMTU_OUTER_STEPS.map((s) => s - PMTU_IP_UDP_HEADROOM);
  }

  /** Probes, acks, losses, raises and black holes of every search so far. */
  stats(): PmtuStats {
    const out = { ...this.#ended };
    for (const e of this.#entries.values()) addStats(out, e.search.stats);
    return out;
  }

  /** The peer's route uses `direct`: searches its MTU (again from the base when the path or remote changed). */
  start(key: Buffer, direct: DirectPath): void {
    const id = keyToBase64(key);
    const known = this.#entries.get(id);
    const remote = `${direct.remote.host}|${direct.remote.port}`;
    if (known && known.direct === direct && known.remote === remote) return;
    this.stop(key);
    const search = new PmtuSearch({
      clock: this.#options.clock,
      base: this.#options.base,
      steps: this.#steps,
      ceiling: this.#ceiling(direct.remote.host),
      timers: this.#options.timers,
    });
    const entry: Entry = {
      key: Buffer.from(key),
      direct,
      remote,
      search,
      lastSent: direct.sent,
      timer: undefined,
    };
    this.#entries.set(id, entry);
    this.#poll(entry);
  }

  /** The peer's route left its direct path (or the peer went): no probes, and the path is back at the base. */
  stop(key: Buffer): void {
    const id = keyToBase64(key);
    const e = this.#entries.get(id);
    if (!e) return;
    this.#options.clock.clearTimer(e.timer);
    this.#entries.delete(id);
    addStats(this.#ended, e.search.stats);
    if (e.direct.setMtu(this.#options.base)) this.#options.onMtuChange(e.key, e.direct);
  }

  /** The peer's direct path moved (roaming): a running search starts over at the base. */
  moved(key: Buffer, direct: DirectPath): void {
    if (this.#entries.has(keyToBase64(key))) this.start(key, direct);
  }

  /** A probe ack from the peer (authenticated, over UDP). False when it answers no probe in flight. */
  ack(key: Buffer, txid: Buffer, size: number): boolean {
    const e = this.#entries.get(keyToBase64(key));
    if (!e?.search.ack(txid, size)) return false;
    this.#poll(e);
    return true;
  }

  close(): void {
    for (const e of this.#entries.values()) this.#options.clock.clearTimer(e.timer);
    this.#entries.clear();
  }

  #ceiling(host: string): number {
    const mtu = (this.#options.firstHopMtu ?? firstHopMtu)(host);
    if (mtu === undefined)
      return this.#options.dontFragment?.() === true ? DISCO_MAX_PROBE_LEN : this.#options.base;
    const headroom =
      host.includes(':') && !host.startsWith('::ffff:') ? PMTU_IP_UDP_HEADROOM : IPV4_UDP_HEADROOM;
    return Math.min(mtu - headroom, DISCO_MAX_PROBE_LEN);
  }

  #poll(e: Entry): void {
    if (this.#entries.get(keyToBase64(e.key)) !== e) return;
    // Active: the path carried datagrams since the last probe (a sender whose datagrams vanish into a black
    // hole slows to its retransmission timeouts but keeps sending).
    const active = e.direct.sent !== e.lastSent;
    const probe = e.search.probeDue(active);
    if (probe) {
      e.lastSent = e.direct.sent;
      this.#options.sendProbe(e.key, e.direct.remote, probe);
    }
    if (e.direct.setMtu(e.search.mtu)) this.#options.onMtuChange(e.key, e.direct);
    this.#arm(e, active);
  }

  /**
   * Wakes for the next probe or timeout; while the MTU is above the base also at least every confirmMs, to see
   * whether traffic flowed (a path at its base, the common case behind a 1,500-byte link, sleeps until the raise
   * timer: an idle peer costs one timer per raiseMs).
   */
  #arm(e: Entry, active: boolean): void {
    const clock = this.#options.clock;
    clock.clearTimer(e.timer);
    const now = clock.now();
    const confirmMs = this.#options.timers?.confirmMs ?? DEFAULT_PMTU_TIMERS.confirmMs;
    const poll = e.search.mtu > this.#options.base ? confirmMs : Number.POSITIVE_INFINITY;
    const wait = Math.min(Math.max(0, e.search.nextWakeAt(active) - now), poll);
    e.timer = clock.setTimer(wait, () => this.#poll(e));
  }
}

function addStats(into: PmtuStats, s: PmtuStats): void {
  into.probes += s.probes;
  into.acks += s.acks;
  into.lost += s.lost;
  into.raised += s.raised;
  into.blackHoles += s.blackHoles;
}
