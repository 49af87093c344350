import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argvWantsJson } from './output-format-argv.js';

/** Words that never set the output format. */
const plain = fc.string().filter((w) => w !== '--' && !w.startsWith('-o') && !w.startsWith('--output'));
const spelling = fc.constantFrom(['--output', 'json'], ['--output=json'], ['-o', 'json'], ['-ojson']);

describe('argvWantsJson', () => {
  it('finds every spelling of json output among other words', () => {
    fc.assert(
      fc.property(fc.array(plain), fc.array(plain), spelling, (before, after, json) => {
        expect(argvWantsJson([...before, ...json, ...after])).toBe(true);
      }),
    );
  });

  it('is false without one, after --, or when a later --output text wins', () => {
    fc.assert(
      fc.property(fc.array(plain), spelling, (words, json) => {
        expect(argvWantsJson(words)).toBe(false);
        expect(argvWantsJson([...words, '--', ...json])).toBe(false);
        expect(argvWantsJson([...json, ...words, '-o', 'text'])).toBe(false);
      }),
    );
  });

  it('does not take the value of --output as a spelling of its own', () => {
    expect(argvWantsJson(['--output', '-ojson'])).toBe(false);
    expect(argvWantsJson(['--display-name', 'x', '-o', 'json'])).toBe(true);
  });
});
