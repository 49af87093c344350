import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { type BodyFraming, bodyFraming, framingHeaders } from './body-framing.js';

/** Header names in any letter case. */
const casing = (name: string) =>
  fc
    .array(fc.boolean(), { minLength: name.length, maxLength: name.length })
    .map((up) => [...name].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));
const ows = fc.constantFrom('', ' ', '\t', '  ');
const other = fc.tuple(
  fc
    .stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/)
    .filter((n) => !/^(content-length|transfer-encoding)$/i.test(n)),
  fc.string({ maxLength: 20 }),
);

function framingOf(headers: Array<[string, string]>): BodyFraming | string {
  try {
    return bodyFraming(headers.flat());
  } catch (err) {
    if (!isTunnelError(err, 'BAD_FRAMING')) throw err;
    return err.message;
  }
}

describe('bodyFraming', () => {
  it('one Content-Length of 1..15 digits is that length, whatever surrounds it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 999_999_999_999_999 }),
        fc.nat({ max: 3 }),
        casing('content-length'),
        ows,
        fc.array(other, { maxLength: 4 }),
        (n, zeros, name, pad, rest) => {
          const value = `${'0'.repeat(zeros)}${n}`.slice(-15);
          const headers: Array<[string, string]> = [...rest, [name, `${pad}${value}${pad}`]];
          expect(framingOf(headers)).toEqual({ kind: 'length', length: Number(value) });
        },
      ),
    );
  });

  it('one Transfer-Encoding of exactly chunked (any case) is chunked; anything else is refused', () => {
    fc.assert(
      fc.property(
        casing('transfer-encoding'),
        casing('chunked'),
        ows,
        fc.array(other, { maxLength: 4 }),
        (name, v, pad, rest) => {
          expect(framingOf([[name, `${pad}${v}${pad}`], ...rest])).toEqual({ kind: 'chunked' });
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (v) => {
        fc.pre(v.trim().toLowerCase() !== 'chunked');
        expect(framingOf([['Transfer-Encoding', v]])).toMatch(/^Transfer-Encoding .* is not supported/);
      }),
    );
    for (const v of ['gzip, chunked', 'chunked, chunked', 'identity', 'chunked;q=1', ''])
      expect(framingOf([['Transfer-Encoding', v]])).toMatch(/is not supported: only "chunked"/);
  });

  it('no framing header means no body', () => {
    fc.assert(
      fc.property(fc.array(other, { maxLength: 6 }), (rest) => {
        expect(framingOf(rest)).toEqual({ kind: 'none' });
      }),
    );
  });

  it('refuses every mix: both headers, several of either, a length that is not one number', () => {
    const cl = fc.tuple(casing('content-length'), fc.string({ maxLength: 20 }));
    const te = fc.tuple(casing('transfer-encoding'), fc.string({ maxLength: 20 }));
    fc.assert(
      fc.property(
        fc.array(cl, { maxLength: 3 }),
        fc.array(te, { maxLength: 3 }),
        fc.array(other, { maxLength: 3 }),
        (lengths, codings, rest) => {
          fc.pre(lengths.length + codings.length >= 2);
          const result = framingOf([...lengths, ...rest, ...codings]);
          expect(typeof result).toBe('string');
          if (lengths.length > 0 && codings.length > 0) expect(result).toMatch(/together with/);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (v) => {
        fc.pre(!/^[0-9]{1,15}$/.test(v.trim()));
        expect(framingOf([['Content-Length', v]])).toMatch(/^Content-Length .* is not one decimal length/);
      }),
    );
    for (const v of ['5, 5', '+5', '-1', '0x10', '1e3', '1234567890123456', ''])
      expect(typeof framingOf([['content-length', v]])).toBe('string');
  });

  it('quotes at most 64 characters of a refused value', () => {
    const msg = framingOf([['Transfer-Encoding', 'x'.repeat(500)]]);
    expect(msg).toContain(`"${'x'.repeat(64)}..."`);
    expect(String(msg).length).toBeLessThan(140);
  });
});

describe('framingHeaders', () => {
  it('sends exactly the framing that was parsed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999_999 }), (n) => {
        const sent = framingHeaders({ kind: 'length', length: n });
        expect(bodyFraming(sent)).toEqual({ kind: 'length', length: n });
      }),
    );
    expect(bodyFraming(framingHeaders({ kind: 'chunked' }))).toEqual({ kind: 'chunked' });
    expect(framingHeaders({ kind: 'none' })).toEqual([]);
  });
});
