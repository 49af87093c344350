/**
 * One of a peer's timers, with wireguard-go's mod_timer/del_timer semantics and per-packet cost: arm() and
 * disarm() run for nearly every datagram sent or received (timers.go), so they only write the deadline.
 * The clock timer underneath is replaced only when a new deadline is earlier than the one it is set for; a
 * clock timer that fires before the deadline (the timer was re-armed later meanwhile) sets itself again for
 * the rest, and one that fires while disarmed does nothing. The callback runs exactly at the deadline.
 */
import type { Clock, TimerHandle } from '../../clock.js';

export class PeerTimer {
  readonly #clock: Clock;
  readonly #callback: () => void;
  /** When the callback is due (Infinity = disarmed). */
  #due = Number.POSITIVE_INFINITY;
  /** When the clock timer fires (Infinity = none set). */
  #firesAt = Number.POSITIVE_INFINITY;
  #handle: TimerHandle | undefined;
  #stopped = false;
  /** The clock callback, made on first use: most of a hub's idle peers never set some of their timers. */
  #onClock: (() => void) | undefined;

  #fire(): void {
    this.#handle = undefined;
    this.#firesAt = Number.POSITIVE_INFINITY;
    if (this.#due === Number.POSITIVE_INFINITY) return;
    const now = this.#clock.now();
    if (now < this.#due) {
      this.#set(now, this.#due);
      return;
    }
    this.#due = Number.POSITIVE_INFINITY;
    this.#callback();
  }

  constructor(clock: Clock, fn: () => void) {
    this.#clock = clock;
    this.#callback = fn;
  }

  get armed(): boolean {
    return this.#due !== Number.POSITIVE_INFINITY;
  }

  /** (Re)arms the timer to fire `ms` from now, replacing any earlier or later deadline. No-op once stopped. */
  arm(ms: number): void {
    if (this.#stopped) return;
    const now = this.#clock.now();
    this.#due = now + ms;
    if (this.#firesAt > this.#due) {
      this.#clock.clearTimer(this.#handle);
      this.#set(now, this.#due);
    }
  }

  disarm(): void {
    this.#due = Number.POSITIVE_INFINITY;
  }

  /** Disarms for good and releases the clock timer (the peer is closing). */
  stop(): void {
    this.#stopped = true;
    this.#due = Number.POSITIVE_INFINITY;
    this.#firesAt = Number.POSITIVE_INFINITY;
    this.#clock.clearTimer(this.#handle);
    this.#handle = undefined;
  }

  #set(now: number, at: number): void {
    this.#firesAt = at;
    this.#onClock ??= () => this.#fire();
    this.#handle = this.#clock.setTimer(at - now, this.#onClock);
  }
}
