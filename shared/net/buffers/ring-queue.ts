/**
 * A bounded FIFO on a circular array: the one queue the data plane uses wherever items wait in order
 * (DERP send queues, handshake backlog, stream write queues, segments awaiting delivery).
 *
 * Storage starts small and doubles (a power of two, so positions wrap with a mask) until it can hold
 * `capacity` items; it never shrinks until clear(). A full queue either refuses a new item (push returns
 * false, nothing kept) or makes room by evicting the oldest one (pushEvicting returns it, so the caller
 * can count the drop and release the item). Taken slots are cleared at once, so the queue holds no
 * reference to an item it has handed back.
 */

const INITIAL_SLOTS = 16;

export interface RingQueueOptions {
  /** Most items held at once (a positive integer, or Infinity for a queue bounded by its caller). */
  capacity: number;
}

export class RingQueue<T> {
  readonly capacity: number;
  #slots: Array<T | undefined>;
  #head = 0;
  #length = 0;

  constructor(opts: RingQueueOptions) {
    const { capacity } = opts;
    if (!(capacity === Number.POSITIVE_INFINITY || (Number.isInteger(capacity) && capacity > 0))) {
      throw new RangeError(`ring queue capacity must be a positive integer, got ${capacity}`);
    }
    this.capacity = capacity;
    this.#slots = new Array(slotsFor(Math.min(capacity, INITIAL_SLOTS)));
  }

  get length(): number {
    return this.#length;
  }

  get full(): boolean {
    return this.#length >= this.capacity;
  }

  /** Appends `item`; false (nothing kept) when `capacity` items wait. */
  push(item: T): boolean {
    if (this.#length >= this.capacity) return false;
    if (this.#length === this.#slots.length) this.#grow();
    this.#slots[(this.#head + this.#length) & (this.#slots.length - 1)] = item;
    this.#length++;
    return true;
  }

  /** Appends `item`, first removing the oldest item when full; returns the removed one, if any. */
  pushEvicting(item: T): T | undefined {
    const evicted = this.#length >= this.capacity ? this.shift() : undefined;
    this.push(item);
    return evicted;
  }

  /** Removes and returns the oldest item (undefined when empty). */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#slots[this.#head];
    this.#slots[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#slots.length - 1);
    this.#length--;
    return item;
  }

  /** The oldest item, left in place (undefined when empty). */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#slots[this.#head];
  }

  /** Drops every item and gives the storage back. */
  clear(): void {
    this.#slots = new Array(slotsFor(Math.min(this.capacity, INITIAL_SLOTS)));
    this.#head = 0;
    this.#length = 0;
  }

  #grow(): void {
    const old = this.#slots;
    const next: Array<T | undefined> = new Array(old.length * 2);
    for (let i = 0; i < this.#length; i++) next[i] = old[(this.#head + i) & (old.length - 1)];
    this.#slots = next;
    this.#head = 0;
  }
}

/** The smallest power of two >= n (n >= 1). */
function slotsFor(n: number): number {
  let slots = 1;
  while (slots < n) slots *= 2;
  return slots;
}
