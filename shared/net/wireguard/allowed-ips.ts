/**
 * AllowedIPs: longest-prefix match over IPv4 and IPv6 CIDRs, mapping an address to a value (a peer).
 * One hash map per prefix length (33 for IPv4, 129 for IPv6); lookups walk only the lengths in use,
 * longest first. Inserting a CIDR already held by another value moves it (as wireguard-go does).
 */
import { TunnelError } from '../../errors.js';

export interface Cidr {
  readonly family: 4 | 6;
  /** Network address bytes (4 or 16), host bits cleared. */
  readonly addr: Buffer;
  readonly bits: number;
}

function parseV4(s: string): Buffer | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = Buffer.alloc(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    out[i] = Number(p);
  }
  return out;
}

function parseV6(s: string): Buffer | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s)) return null;
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const words = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const w of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(w)) return null;
      out.push(Number.parseInt(w, 16));
    }
    return out;
  };
  const head = words(halves[0]!);
  const tail = halves.length === 2 ? words(halves[1]!) : [];
  if (!head || !tail) return null;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return null;
  const all = [...head, ...new Array<number>(fill).fill(0), ...tail];
  const out = Buffer.alloc(16);
  for (let i = 0; i < 8; i++) out.writeUInt16BE(all[i]!, i * 2);
  return out;
}

function mask(addr: Buffer, bits: number): Buffer {
  const out = Buffer.from(addr);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    out[i] = out[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/** Parses "a.b.c.d/n" or an IPv6 CIDR; a bare address means /32 or /128. */
export function parseCidr(text: string): Cidr {
  const [ip = '', len, extra] = text.trim().split('/');
  const bad = () =>
    new TunnelError(
      'BAD_INPUT',
      `allowed IP ${JSON.stringify(text)} is not a CIDR like 10.0.0.0/24 or fd00::/64`,
    );
  if (extra !== undefined) throw bad();
  const v4 = parseV4(ip);
  const addr = v4 ?? parseV6(ip);
  if (!addr) throw bad();
  const max = addr.length * 8;
  if (len !== undefined && !/^\d{1,3}$/.test(len)) throw bad();
  const bits = len === undefined ? max : Number(len);
  if (bits > max) throw bad();
  return { family: v4 ? 4 : 6, addr: mask(addr, bits), bits };
}

export function formatCidr(c: Cidr): string {
  if (c.family === 4) return `${[...c.addr].join('.')}/${c.bits}`;
  const w: string[] = [];
  for (let i = 0; i < 16; i += 2) w.push(c.addr.readUInt16BE(i).toString(16));
  return `${w.join(':')}/${c.bits}`;
}

const v4Mask = (bits: number): number => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);

export class AllowedIps<V> {
  /** IPv4: prefix length -> masked address (u32) -> value. IPv6: prefix length -> masked hex -> value. */
  readonly #ipv4ByLength = new Map<number, Map<number, V>>();
  readonly #ipv6ByLength = new Map<number, Map<string, V>>();
  #lengths4: number[] = [];
  #lengths6: number[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  insert(c: Cidr, value: V): void {
    if (c.family === 4) {
      let m = this.#ipv4ByLength.get(c.bits);
      if (!m) {
        m = new Map();
        this.#ipv4ByLength.set(c.bits, m);
        this.#lengths4 = [...this.#ipv4ByLength.keys()].sort((a, b) => b - a);
      }
      const key = c.addr.readUInt32BE(0);
      if (!m.has(key)) this.#size++;
      m.set(key, value);
    } else {
      let m = this.#ipv6ByLength.get(c.bits);
      if (!m) {
        m = new Map();
        this.#ipv6ByLength.set(c.bits, m);
        this.#lengths6 = [...this.#ipv6ByLength.keys()].sort((a, b) => b - a);
      }
      const key = c.addr.toString('hex');
      if (!m.has(key)) this.#size++;
      m.set(key, value);
    }
  }

  /** Removes every CIDR that maps to `value`. */
  removeValue(value: V): void {
    for (const m of this.#ipv4ByLength.values()) this.#size -= removeMatching(m, value);
    for (const m of this.#ipv6ByLength.values()) this.#size -= removeMatching(m, value);
  }

  /** Longest-prefix match of a 4- or 16-byte address. */
  lookup(addr: Uint8Array): V | undefined {
    if (addr.length === 4) {
      const a = ((addr[0]! << 24) | (addr[1]! << 16) | (addr[2]! << 8) | addr[3]!) >>> 0;
      for (const bits of this.#lengths4) {
        const v = this.#ipv4ByLength.get(bits)!.get((a & v4Mask(bits)) >>> 0);
        if (v !== undefined) return v;
      }
      return undefined;
    }
    if (addr.length !== 16) return undefined;
    const buf = Buffer.from(addr);
    for (const bits of this.#lengths6) {
      const v = this.#ipv6ByLength.get(bits)!.get(mask(buf, bits).toString('hex'));
      if (v !== undefined) return v;
    }
    return undefined;
  }

  entries(value: V): Cidr[] {
    const out: Cidr[] = [];
    for (const [bits, m] of this.#ipv4ByLength) {
      for (const [k, v] of m) {
        if (v !== value) continue;
        const addr = Buffer.alloc(4);
        addr.writeUInt32BE(k);
        out.push({ family: 4, addr, bits });
      }
    }
    for (const [bits, m] of this.#ipv6ByLength) {
      for (const [k, v] of m) if (v === value) out.push({ family: 6, addr: Buffer.from(k, 'hex'), bits });
    }
    return out;
  }
}

/** Deletes every entry of `m` whose value is `value`; returns how many went. */
function removeMatching<K, V>(m: Map<K, V>, value: V): number {
  let removed = 0;
  for (const [k, v] of m) {
    if (v === value) {
      m.delete(k);
      removed++;
    }
  }
  return removed;
}
