import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { finishChecksum, internetChecksum, onesSum } from './checksum.js';

/** A deliberately naive reference: sum of big-endian words, folded at the end. */
function reference(b: Uint8Array): number {
  let s = 0;
  for (let i = 0; i < b.length; i += 2) s += (b[i]! << 8) | (b[i + 1] ?? 0);
  while (s > 0xffff) s = (s & 0xffff) + Math.floor(s / 0x10000);
  return ~s & 0xffff;
}

describe('internet checksum', () => {
  it('matches the RFC 1071 section 3 example (sum ddf2, checksum 220d)', () => {
    const b = Buffer.from('0001f203f4f5f6f7', 'hex');
    expect(finishChecksum(onesSum(b))).toBe(0x220d);
  });

  it('verifies the header checksum of IPv4 headers captured from the kernel', () => {
    // ping -s 12 from a network namespace, captured on the host side of a veth pair.
    const icmp = Buffer.from('45000028a921400040016a1b0acb09020acb0901', 'hex');
    expect(internetChecksum(icmp)).toBe(0);
    const udp = Buffer.from('45000022c21c4000401151160acb09020acb0901', 'hex');
    expect(internetChecksum(udp)).toBe(0);
    const bad = Buffer.from(icmp);
    bad[8] = 63; // TTL changed, checksum stale
    expect(internetChecksum(bad)).not.toBe(0);
  });

  it('agrees with a naive reference on random data, any length and offset', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(8), (b, skip) => {
        const start = Math.min(skip, b.length);
        expect(internetChecksum(b, start)).toBe(reference(b.subarray(start)));
      }),
    );
  });

  it('agrees with the reference at every alignment of the underlying memory', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 600 }), fc.nat(7), fc.nat(7), (raw, pre, post) => {
        const backing = new Uint8Array(pre + raw.length + post);
        backing.set(raw, pre);
        const view = backing.subarray(pre, pre + raw.length);
        expect(internetChecksum(view)).toBe(reference(raw));
        expect(internetChecksum(backing, pre, pre + raw.length)).toBe(reference(raw));
      }),
    );
    // All-ones data stresses the carries.
    const ff = new Uint8Array(4096).fill(0xff);
    expect(internetChecksum(ff)).toBe(reference(ff));
  });

  it('gives 0 over data that embeds its own checksum', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 2, maxLength: 200 }), (raw) => {
        const b = Buffer.from(raw.length % 2 ? [...raw, 0] : raw);
        b.writeUInt16BE(0, 0);
        b.writeUInt16BE(internetChecksum(b), 0);
        expect(internetChecksum(b)).toBe(0);
      }),
    );
  });
});
