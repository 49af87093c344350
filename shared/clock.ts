/**
 * Injected time. Everything that waits or measures takes a Clock so tests can drive timers with
 * FakeClock instead of sleeping.
 */
export type TimerHandle = { readonly id: number };

export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Wall-clock milliseconds since the Unix epoch (TAI64N timestamps, lastTransitionTime). */
  wallNow(): number;
  setTimer(ms: number, fn: () => void): TimerHandle;
  clearTimer(handle: TimerHandle | undefined): void;
}

class RealClock implements Clock {
  #next = 1;
  readonly #timers = new Map<number, NodeJS.Timeout>();

  now(): number {
    return performance.now();
  }

  wallNow(): number {
    return Date.now();
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = this.#next++;
    const t = setTimeout(() => {
      this.#timers.delete(id);
      fn();
    }, ms);
    t.unref();
    this.#timers.set(id, t);
    return { id };
  }

  clearTimer(handle: TimerHandle | undefined): void {
    if (!handle) return;
    const t = this.#timers.get(handle.id);
    if (t) {
      clearTimeout(t);
      this.#timers.delete(handle.id);
    }
  }
}

export const realClock: Clock = new RealClock();

/** A clock that only moves when told to. Timers fire in deadline order during advance(). */
export class FakeClock implements Clock {
  #now: number;
  #wallOffset: number;
  #next = 1;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 1_000_000, wallStart = Date.UTC(2026, 0, 1)) {
    this.#now = start;
    this.#wallOffset = wallStart - start;
  }

  now(): number {
    return this.#now;
  }

  wallNow(): number {
    return this.#now + this.#wallOffset;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimer(handle: TimerHandle | undefined): void {
    if (handle) this.#timers.delete(handle.id);
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let dueId = -1;
      let dueAt = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.#timers) {
        if (t.at <= target && (t.at < dueAt || (t.at === dueAt && id < dueId))) {
          dueAt = t.at;
          dueId = id;
        }
      }
      if (dueId < 0) break;
      const t = this.#timers.get(dueId)!;
      this.#timers.delete(dueId);
      this.#now = Math.max(this.#now, t.at);
      t.fn();
    }
    this.#now = target;
  }
}
