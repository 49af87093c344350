/**
 * Test harness: a one-way datagram link with seeded random loss, duplication, reordering (extra delay),
 * latency + jitter, a path MTU (larger datagrams are dropped) and blackout windows. Driven by a Clock
 * (FakeClock for deterministic tests). One timer per link, armed for the earliest pending delivery.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';

export interface FaultyLinkOptions {
  clock: Clock;
  /** Seed for the link's PRNG (mulberry32). */
  seed?: number;
  loss?: number;
  duplicate?: number;
  /** Probability that a datagram is held back an extra reorderMs (so later ones overtake it). */
  reorder?: number;
  reorderMs?: number;
  latencyMs?: number;
  jitterMs?: number;
  /** Datagrams larger than this are dropped (a path MTU). */
  mtu?: number;
  /** Cap on datagrams waiting in the link; beyond it they are dropped (a bounded queue). */
  maxQueued?: number;
}

export interface LinkCounters {
  sent: number;
  delivered: number;
  lost: number;
  duplicated: number;
  reordered: number;
  tooBig: number;
  blackout: number;
  overflow: number;
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultyLink {
  readonly counters: LinkCounters = {
    sent: 0,
    delivered: 0,
    lost: 0,
    duplicated: 0,
    reordered: 0,
    tooBig: 0,
    blackout: 0,
    overflow: 0,
  };
  /** Set to a function to receive datagrams. */
  deliver: (d: Buffer) => void = () => {};
  opts: Required<Omit<FaultyLinkOptions, 'clock' | 'seed'>>;
  readonly #clock: Clock;
  readonly #rand: () => number;
  #queue: { at: number; seq: number; d: Buffer }[] = [];
  #seq = 0;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #blackouts: { from: number; to: number }[] = [];

  constructor(o: FaultyLinkOptions) {
    this.#clock = o.clock;
    this.#rand = mulberry32(o.seed ?? 1);
    this.opts = {
      loss: o.loss ?? 0,
      duplicate: o.duplicate ?? 0,
      reorder: o.reorder ?? 0,
      reorderMs: o.reorderMs ?? 15,
      latencyMs: o.latencyMs ?? 5,
      jitterMs: o.jitterMs ?? 0,
      mtu: o.mtu ?? 65_535,
      maxQueued: o.maxQueued ?? 100_000,
    };
  }

  /** Drops everything sent during [from, to) (clock time). */
  addBlackout(from: number, to: number): void {
    this.#blackouts.push({ from, to });
  }

  get queued(): number {
    return this.#queue.length;
  }

  send = (d: Buffer): void => {
    const c = this.counters;
    c.sent++;
    const now = this.#clock.now();
    if (this.#blackouts.some((b) => now >= b.from && now < b.to)) {
      c.blackout++;
      return;
    }
    if (d.length > this.opts.mtu) {
      c.tooBig++;
      return;
    }
    if (this.#rand() < this.opts.loss) {
      c.lost++;
      return;
    }
    const copies = this.#rand() < this.opts.duplicate ? 2 : 1;
    if (copies === 2) c.duplicated++;
    for (let i = 0; i < copies; i++) {
      if (this.#queue.length >= this.opts.maxQueued) {
        c.overflow++;
        return;
      }
      let delay = this.opts.latencyMs + this.#rand() * this.opts.jitterMs;
      if (this.#rand() < this.opts.reorder) {
        delay += this.opts.reorderMs;
        c.reordered++;
      }
      // A private copy: the sender may not reuse its buffer, but a duplicate must not alias the first.
      this.#insert(now + delay, i === 0 ? d : Buffer.from(d));
    }
    this.#arm();
  };

  close(): void {
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#queue = [];
  }

  #insert(at: number, d: Buffer): void {
    const q = this.#queue;
    const item = { at, seq: this.#seq++, d };
    let lo = 0;
    let hi = q.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (q[mid]!.at <= at) lo = mid + 1;
      else hi = mid;
    }
    q.splice(lo, 0, item);
  }

  #arm(): void {
    const first = this.#queue[0];
    if (!first) return;
    if (this.#timer && this.#timerAt <= first.at) return;
    this.#clock.clearTimer(this.#timer);
    this.#timerAt = first.at;
    this.#timer = this.#clock.setTimer(Math.max(0, first.at - this.#clock.now()), () => this.#fire());
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    while (this.#queue.length > 0 && this.#queue[0]!.at <= now) this.#deliverOne();
    this.#arm();
  }

  #deliverOne(): void {
    const item = this.#queue.shift()!;
    this.counters.delivered++;
    this.deliver(item.d);
  }
}

/** Two faulty links joined into a bidirectional path (a -> b uses `ab`, b -> a uses `ba`). */
export function faultyPath(
  clock: Clock,
  opts: Omit<FaultyLinkOptions, 'clock'> = {},
): { ab: FaultyLink; ba: FaultyLink } {
  const ab = new FaultyLink({ ...opts, clock, seed: opts.seed ?? 1 });
  const ba = new FaultyLink({ ...opts, clock, seed: (opts.seed ?? 1) + 7919 });
  return { ab, ba };
}

/** Test convenience: sends `data` from one writer in chunks, honouring write() === false -> 'drain'. */
export function pumpInto(
  w: { write(b: Buffer): boolean; once(ev: 'drain', fn: () => void): unknown },
  data: Buffer,
  chunk: number,
  onDone?: () => void,
): void {
  let off = 0;
  const pump = (): void => {
    while (off < data.length) {
      const n = Math.min(chunk, data.length - off);
      const ok = w.write(data.subarray(off, off + n));
      off += n;
      if (!ok && off < data.length) {
        w.once('drain', pump);
        return;
      }
    }
    onDone?.();
  };
  pump();
}
