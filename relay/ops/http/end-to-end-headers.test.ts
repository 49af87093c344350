import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { endToEndHeaders } from './end-to-end-headers.js';

const name = fc.constantFrom('Connection', 'X-Hop', 'x-hop', 'Accept', 'Content-Length', 'TE', 'Host');
const value = fc.constantFrom('1', 'x-hop', 'close, X-Hop', 'te', 'content-length');
const flat = fc.array(fc.tuple(name, value), { maxLength: 8 }).map((pairs) => pairs.flat());

describe('endToEndHeaders', () => {
  it('drops listed and Connection-named headers unless kept, and keeps the rest in order', () => {
    const drop = new Set(['connection', 'te']);
    const keep = new Set(['content-length']);
    fc.assert(
      fc.property(flat, (raw) => {
        const named = new Set<string>();
        for (let i = 0; i < raw.length; i += 2) {
          if (raw[i]!.toLowerCase() === 'connection') {
            for (const t of raw[i + 1]!.split(',')) named.add(t.trim().toLowerCase());
          }
        }
        const expected: string[] = [];
        for (let i = 0; i < raw.length; i += 2) {
          const k = raw[i]!.toLowerCase();
          if (keep.has(k) || !(drop.has(k) || named.has(k))) expected.push(raw[i]!, raw[i + 1]!);
        }
        expect(endToEndHeaders(raw, drop, keep)).toEqual(expected);
      }),
    );
  });

  it('a kept name survives even when Connection names it', () => {
    const raw = ['Connection', 'content-length, X-Hop', 'X-Hop', '1', 'Content-Length', '3', 'Accept', '*/*'];
    expect(endToEndHeaders(raw, new Set(['connection']), new Set(['content-length']))).toEqual([
      'Content-Length',
      '3',
      'Accept',
      '*/*',
    ]);
    expect(endToEndHeaders(raw, new Set(['connection']))).toEqual(['Accept', '*/*']);
  });
});
