import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shellQuote } from './shell-quote.js';

describe('shellQuote', () => {
  it('leaves safe words alone', () => {
    expect(shellQuote('/tmp/state-1')).toBe('/tmp/state-1');
    expect(shellQuote('sha256:ab12')).toBe('sha256:ab12');
  });

  it('quotes anything else', () => {
    expect(shellQuote('a b')).toBe('"a b"');
    expect(shellQuote("it's")).toBe(`"it's"`);
    expect(shellQuote('$HOME')).toBe("'$HOME'");
    expect(shellQuote(`it's $x`)).toBe(`'it'\\''s $x'`);
    expect(shellQuote('')).toBe('""');
  });

  it('sh reads back every quoted word as the word itself', () => {
    // Words without NUL (which argv cannot carry); 50 runs keep the spawned shells few.
    const word = fc.string({ unit: 'binary-ascii', maxLength: 24 }).filter((w) => !w.includes('\0'));
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (words) => {
        const script = `printf '%s\\0' ${words.map(shellQuote).join(' ')}`;
        const out = execFileSync('/bin/sh', ['-c', script]).toString();
        expect(out.split('\0').slice(0, -1)).toEqual(words);
      }),
      { numRuns: 50 },
    );
  });
});
