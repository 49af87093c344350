import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { AllowedIps, formatCidr, parseCidr } from './allowed-ips.js';

const v4 = (s: string) => Buffer.from(s.split('.').map(Number));

describe('AllowedIps', () => {
  it('parses and normalises CIDRs', () => {
    expect(formatCidr(parseCidr('10.1.2.3/8'))).toBe('10.0.0.0/8');
    expect(formatCidr(parseCidr('10.1.2.3'))).toBe('10.1.2.3/32');
    expect(formatCidr(parseCidr('0.0.0.0/0'))).toBe('0.0.0.0/0');
    expect(formatCidr(parseCidr('fd00::1/64'))).toBe('fd00:0:0:0:0:0:0:0/64');
    expect(formatCidr(parseCidr('::/0'))).toBe('0:0:0:0:0:0:0:0/0');
    for (const bad of ['10.0.0.0/33', '256.0.0.1/8', '10.0.0/8', '1.2.3.4/8/9', 'fd00::1::2/64', 'x', '']) {
      expect(() => parseCidr(bad)).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    }
  });

  it('longest prefix wins; removal falls back to the shorter prefix', () => {
    const t = new AllowedIps<string>();
    t.insert(parseCidr('10.0.0.0/8'), 'wide');
    t.insert(parseCidr('10.1.0.0/16'), 'mid');
    t.insert(parseCidr('10.1.2.3/32'), 'host');
    t.insert(parseCidr('fd00::/8'), 'v6');
    expect(t.lookup(v4('10.1.2.3'))).toBe('host');
    expect(t.lookup(v4('10.1.2.4'))).toBe('mid');
    expect(t.lookup(v4('10.2.0.1'))).toBe('wide');
    expect(t.lookup(v4('11.0.0.1'))).toBeUndefined();
    expect(t.lookup(Buffer.from('fd000000000000000000000000000001', 'hex'))).toBe('v6');
    t.removeValue('host');
    expect(t.lookup(v4('10.1.2.3'))).toBe('mid');
    expect(t.entries('mid').map(formatCidr)).toEqual(['10.1.0.0/16']);
    t.insert(parseCidr('10.1.0.0/16'), 'moved');
    expect(t.lookup(v4('10.1.9.9'))).toBe('moved');
    expect(t.size).toBe(3);
  });

  it('agrees with a brute-force longest-prefix search (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 })), {
          maxLength: 20,
        }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (routes, addr) => {
          const t = new AllowedIps<number>();
          const mask = (bits: number) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);
          const table = new Map<string, number>();
          routes.forEach(([a, bits], i) => {
            const net = (a & mask(bits)) >>> 0;
            const b = Buffer.alloc(4);
            b.writeUInt32BE(a >>> 0);
            t.insert(parseCidr(`${[...b].join('.')}/${bits}`), i);
            table.set(`${net}/${bits}`, i);
          });
          let best = -1;
          let want: number | undefined;
          for (const [k, v] of table) {
            const [net, bits] = k.split('/').map(Number) as [number, number];
            if ((addr & mask(bits)) >>> 0 === net && bits > best) {
              best = bits;
              want = v;
            }
          }
          const q = Buffer.alloc(4);
          q.writeUInt32BE(addr >>> 0);
          expect(t.lookup(q)).toBe(want);
        },
      ),
    );
  });

  it('parseCidr throws only TunnelError on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 50 }), (s) => {
        try {
          parseCidr(s);
        } catch (e) {
          expect(isTunnelError(e, 'BAD_INPUT')).toBe(true);
        }
      }),
    );
  });
});
