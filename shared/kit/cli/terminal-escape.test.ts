import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeLines, escapeText, hasUnsafeCharacters, safeJson } from './terminal-escape.js';

/** Strings rich in what matters here: C0, DEL, C1, bidi and format characters, separators, lone surrogates. */
const nasty = fc.constantFrom(
  '\x1b[2J',
  '\x1b]8;;https://evil.example\x07click\x1b]8;;\x07',
  '\x1b]52;c;aGVsbG8=\x07',
  '\u202e',
  '\u200e',
  '\u200f',
  '\u061c',
  '\u2066',
  '\u2069',
  '\u200b',
  '\ufeff',
  '\u2028',
  '\u2029',
  '\x7f',
  '\x85',
  '\x9b',
  '\r',
  '\n',
  '\t',
  '\0',
  '\ud800',
  '\udc00',
  '\u{e0001}',
  '\\u001b',
  'plain',
  'é日本😀',
);
const mixed = fc
  .array(fc.oneof(nasty, fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' })), {
    maxLength: 8,
  })
  .map((parts) => parts.join(''));

/** Code points a terminal acts on or hides, checked one by one (independent of the module's regex). */
function dangerous(cp: number): boolean {
  return (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    cp === 0x061c ||
    cp === 0x200e ||
    cp === 0x200f ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    (cp >= 0x200b && cp <= 0x200d) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    cp === 0xfeff ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xe0000 && cp <= 0xe007f)
  );
}
const codePoints = (s: string) => [...s].map((c) => c.codePointAt(0) ?? 0);

describe('terminal escaping', () => {
  it('property: escapeText leaves no control, bidi or format character, is idempotent, keeps safe text', () => {
    fc.assert(
      fc.property(mixed, (s) => {
        const e = escapeText(s);
        expect(codePoints(e).filter(dangerous)).toEqual([]);
        expect(hasUnsafeCharacters(e)).toBe(false);
        expect(escapeText(e)).toBe(e);
        if (!hasUnsafeCharacters(s)) expect(e).toBe(s);
        else expect(e).not.toBe(s);
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: escapeLines keeps exactly the line feeds and escapes the rest', () => {
    fc.assert(
      fc.property(mixed, (s) => {
        const e = escapeLines(s);
        expect(e.split('\n').length).toBe(s.split('\n').length);
        expect(codePoints(e).filter((cp) => cp !== 0x0a && dangerous(cp))).toEqual([]);
        expect(e.split('\n')).toEqual(s.split('\n').map(escapeText));
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: safeJson is valid JSON of the same value with no raw dangerous character', () => {
    const value = fc.jsonValue().chain((v) => fc.constant(v));
    const withNasty = fc.dictionary(mixed, fc.oneof(mixed, fc.array(mixed), value), { maxKeys: 5 });
    fc.assert(
      fc.property(withNasty, fc.constantFrom(undefined, 2), (v, indent) => {
        const text = safeJson(v, indent);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
        expect(codePoints(text).filter((cp) => cp !== 0x0a && dangerous(cp))).toEqual([]);
        if (indent === undefined) expect(text.includes('\n')).toBe(false);
      }),
      { numRuns: 1_000 },
    );
  });

  it('writes ESC, OSC and U+202E as visible escapes', () => {
    expect(escapeText('a\x1b[2Jb\u202ec')).toBe('a\\u001b[2Jb\\u202ec');
    expect(escapeText('\u{e0041}')).toBe('\\u{e0041}');
    expect(safeJson({ k: '\x1b]52;c;x\x07\u202e\x9b' })).toBe('{"k":"\\u001b]52;c;x\\u0007\\u202e\\u009b"}');
  });
});
