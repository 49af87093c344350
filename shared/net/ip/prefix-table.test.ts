import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cidrContains, formatCidr, formatIpv4Address, parseCidr, parseIpv4Address } from './address.js';
import { HUB_TUNNEL_ADDRESS, isAssignable, nextFreeAddress, TUNNEL_POOL } from './allocate.js';
import { PrefixTable } from './prefix-table.js';

describe('PrefixTable', () => {
  it('finds the longest matching prefix', () => {
    const t = new PrefixTable<string>();
    t.set('0.0.0.0/0', 'default');
    t.set('10.0.0.0/8', 'ten');
    t.set('10.1.0.0/16', 'ten-one');
    t.set('10.1.2.3/32', 'host');
    const ip = parseIpv4Address;
    expect(t.lookup(ip('10.1.2.3'))).toBe('host');
    expect(t.lookup(ip('10.1.2.4'))).toBe('ten-one');
    expect(t.lookup(ip('10.2.0.1'))).toBe('ten');
    expect(t.lookup(ip('192.168.0.1'))).toBe('default');
    expect(t.delete('10.1.0.0/16')).toBe(true);
    expect(t.delete('10.1.0.0/16')).toBe(false);
    expect(t.lookup(ip('10.1.2.4'))).toBe('ten');
    expect(t.size).toBe(3);
    expect(t.deleteWhere((v) => v.startsWith('ten'))).toBe(1);
    expect(t.lookup(ip('10.1.2.4'))).toBe('default');
    expect([...t.entries()].map(([c, v]) => `${formatCidr(c)}=${v}`)).toEqual([
      '10.1.2.3/32=host',
      '0.0.0.0/0=default',
    ]);
  });

  it('caps its size with LIMIT_EXCEEDED, but still allows replacing existing prefixes', () => {
    const t = new PrefixTable<number>(2);
    t.set('1.0.0.0/8', 1);
    t.set('2.0.0.0/8', 2);
    t.set('2.0.0.0/8', 3);
    expect(t.getExact('2.0.0.0/8')).toBe(3);
    expect(() => t.set('3.0.0.0/8', 3)).toThrow(expect.objectContaining({ code: 'LIMIT_EXCEEDED' }));
    t.delete('1.0.0.0/8');
    t.set('3.0.0.0/8', 3);
    expect(t.size).toBe(2);
  });

  it('agrees with a linear scan on random tables', () => {
    const prefix = fc.tuple(fc.nat({ max: 0xffffffff }), fc.integer({ min: 0, max: 32 }));
    fc.assert(
      fc.property(
        fc.array(prefix, { maxLength: 40 }),
        fc.array(fc.nat({ max: 0xffffffff }), { maxLength: 20 }),
        (ps, probes) => {
          const t = new PrefixTable<string>();
          const list: { c: ReturnType<typeof parseCidr>; v: string }[] = [];
          for (const [a, len] of ps) {
            const c = parseCidr(`${formatIpv4Address(a)}/${len}`);
            const v = formatCidr(c);
            t.set(c, v);
            if (!list.some((x) => x.v === v)) list.push({ c, v });
          }
          expect(t.size).toBe(list.length);
          for (const p of [...probes, ...ps.map(([a]) => a)]) {
            let best: { c: ReturnType<typeof parseCidr>; v: string } | undefined;
            for (const x of list)
              if (cidrContains(x.c, p) && (!best || x.c.prefixLength > best.c.prefixLength)) best = x;
            expect(t.lookup(p)).toBe(best?.v);
          }
        },
      ),
    );
  });
});

describe('tunnel address allocation', () => {
  it('hands out 100.64.0.2 first, skipping the hub, then the next free one', () => {
    const used = new Set<number>();
    const a = nextFreeAddress(used);
    expect(formatIpv4Address(a)).toBe('100.64.0.2');
    used.add(a);
    used.add(parseIpv4Address('100.64.0.3'));
    expect(formatIpv4Address(nextFreeAddress(used))).toBe('100.64.0.4');
    expect(isAssignable(HUB_TUNNEL_ADDRESS)).toBe(false);
    expect(isAssignable(TUNNEL_POOL.network)).toBe(false);
    expect(isAssignable(parseIpv4Address('100.127.255.255'))).toBe(false);
    expect(isAssignable(parseIpv4Address('100.128.0.1'))).toBe(false);
    expect(isAssignable(parseIpv4Address('100.127.255.254'))).toBe(true);
  });

  it('reports exhaustion of a small pool with LIMIT_EXCEEDED', () => {
    const pool = parseCidr('10.9.9.0/29'); // .1-.6 usable
    const used = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const a = nextFreeAddress(used, pool);
      expect(isAssignable(a, pool)).toBe(true);
      used.add(a);
    }
    expect(() => nextFreeAddress(used, pool)).toThrow(expect.objectContaining({ code: 'LIMIT_EXCEEDED' }));
  });

  it('never returns a used or unassignable address', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 300 }), { maxLength: 200 }), (offsets) => {
        const used = new Set(offsets.map((o) => TUNNEL_POOL.network + o));
        const a = nextFreeAddress(used);
        expect(used.has(a)).toBe(false);
        expect(isAssignable(a)).toBe(true);
        for (let x = TUNNEL_POOL.network; x < a; x++) expect(used.has(x) || !isAssignable(x)).toBe(true);
      }),
    );
  });
});
