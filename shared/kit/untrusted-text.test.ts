import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as terminal from './cli/terminal-escape.js';
import { escapeLines, escapeText, hasUnsafeCharacters } from './untrusted-text.js';

/** Every code point a page or terminal would act on, hide or reorder: general categories Cc, Cf, Zl, Zp, Cs. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

describe('the one rule for untrusted text (CLIs and console)', () => {
  it('shows a bidi-spoofed display name as escapes, never as the text it imitates', () => {
    const spoof = 'staging \u202Edorp-ton\u202C';
    expect(escapeText(spoof)).toBe('staging \\u202edorp-ton\\u202c');
    expect(escapeText('prod\u2066x\u2069\u200b\u200e\u061c\ufeff')).toBe(
      'prod\\u2066x\\u2069\\u200b\\u200e\\u061c\\ufeff',
    );
    expect(escapeText('a\u2028b\u2029c\x85d\ud800')).toBe('a\\u2028b\\u2029c\\u0085d\\ud800');
    expect(escapeText('tag\u{e0041}')).toBe('tag\\u{e0041}');
    expect(escapeLines('key: \u202evalue\nnext: \tx\n')).toBe('key: \\u202evalue\nnext: \\u0009x\n');
    expect(escapeText('é日本😀 plain <b>')).toBe('é日本😀 plain <b>');
  });

  it('property: nothing hidden is left, visible text is kept, escaping twice changes nothing', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const shown = escapeText(s);
        expect(HIDDEN.test(shown)).toBe(false);
        expect(escapeText(shown)).toBe(shown);
        expect(shown === s).toBe(!hasUnsafeCharacters(s));
        expect(escapeLines(s).split('\n')).toEqual(s.split('\n').map(escapeText));
      }),
      { numRuns: 2_000 },
    );
  });

  it('is the rule the CLIs print with, and imports nothing (the console bundles it)', () => {
    expect(terminal.escapeText).toBe(escapeText);
    expect(terminal.escapeLines).toBe(escapeLines);
    expect(terminal.hasUnsafeCharacters).toBe(hasUnsafeCharacters);
    const source = readFileSync(new URL('./untrusted-text.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
  });
});
