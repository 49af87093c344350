/**
 * IPv4 longest-prefix-match table (WireGuard's allowed-IPs routing): maps CIDRs to values and
 * finds the most specific entry containing an address. One hash map per prefix length in use;
 * a lookup probes only the lengths present, longest first (at most 33 probes).
 * Capped at `maxEntries` (default 65,536): inserting a new prefix beyond it throws LIMIT_EXCEEDED.
 */
import { TunnelError } from '../../errors.js';
import { type Cidr, formatCidr, maskFor, parseCidr } from './address.js';

export const PREFIX_TABLE_DEFAULT_MAX = 65_536;

export class PrefixTable<T> {
  readonly maxEntries: number;
  readonly #byLength = new Map<number, Map<number, T>>();
  /** Prefix lengths in use, longest first. */
  #lengths: number[] = [];
  #size = 0;

  constructor(maxEntries = PREFIX_TABLE_DEFAULT_MAX) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new TunnelError('BAD_INPUT', 'maxEntries must be a positive integer');
    }
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.#size;
  }

  /** Adds or replaces the value for a prefix (string CIDRs are parsed; host bits cleared). */
  set(prefix: Cidr | string, value: T): void {
    const c = typeof prefix === 'string' ? parseCidr(prefix) : prefix;
    let m = this.#byLength.get(c.prefixLength);
    if (m?.has(c.network)) {
      m.set(c.network, value);
      return;
    }
    if (this.#size >= this.maxEntries) {
      throw new TunnelError(
        'LIMIT_EXCEEDED',
        `prefix table is full (${this.maxEntries} entries); cannot add ${formatCidr(c)}`,
      );
    }
    if (!m) {
      m = new Map();
      this.#byLength.set(c.prefixLength, m);
      this.#lengths = [...this.#byLength.keys()].sort((a, b) => b - a);
    }
    m.set(c.network, value);
    this.#size++;
  }

  /** Removes an exact prefix; returns whether it was present. */
  delete(prefix: Cidr | string): boolean {
    const c = typeof prefix === 'string' ? parseCidr(prefix) : prefix;
    const m = this.#byLength.get(c.prefixLength);
    if (!m?.delete(c.network)) return false;
    this.#size--;
    if (m.size === 0) {
      this.#byLength.delete(c.prefixLength);
      this.#lengths = this.#lengths.filter((l) => l !== c.prefixLength);
    }
    return true;
  }

  /** Exact-prefix lookup. */
  getExact(prefix: Cidr | string): T | undefined {
    const c = typeof prefix === 'string' ? parseCidr(prefix) : prefix;
    return this.#byLength.get(c.prefixLength)?.get(c.network);
  }

  /** The value of the longest prefix containing `addr` (a u32), or undefined. */
  lookup(addr: number): T | undefined {
    for (const len of this.#lengths) {
      const v = this.#byLength.get(len)!.get((addr & maskFor(len)) >>> 0);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  /** Removes every prefix whose value satisfies `pred` (e.g. all of one peer's allowed IPs). */
  deleteWhere(pred: (value: T) => boolean): number {
    let n = 0;
    for (const [len, m] of this.#byLength) {
      for (const [net, v] of m) {
        if (pred(v)) {
          m.delete(net);
          n++;
        }
      }
      if (m.size === 0) this.#byLength.delete(len);
    }
    this.#size -= n;
    this.#lengths = [...this.#byLength.keys()].sort((a, b) => b - a);
    return n;
  }

  *entries(): IterableIterator<[Cidr, T]> {
    for (const len of this.#lengths) {
      for (const [network, v] of this.#byLength.get(len)!) {
        yield [{ network, prefixLength: len, mask: maskFor(len) }, v];
      }
    }
  }

  clear(): void {
    this.#byLength.clear();
    this.#lengths = [];
    this.#size = 0;
  }
}
