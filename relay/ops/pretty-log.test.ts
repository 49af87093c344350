import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasUnsafeCharacters } from '../../shared/kit/cli/terminal-escape.js';
import { prettyLine } from './pretty-log.js';

describe('prettyLine', () => {
  it('writes time, level, message and the other fields as key=value', () => {
    const time = new Date(2026, 10, 25, 14, 2, 3, 45).getTime();
    const line = JSON.stringify({
      level: 40,
      time,
      pid: 1,
      hostname: 'h',
      msg: 'relay listening',
      url: 'https://127.0.0.1:8443',
      http: { maxConnections: 10 },
      note: 'two words',
    });
    expect(prettyLine(line)).toBe(
      '14:02:03.045 WARN  relay listening url=https://127.0.0.1:8443 http={"maxConnections":10} note="two words"',
    );
  });

  it('escapes what a terminal would act on, in the message and in fields', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'a\u001b[2Jb', cluster: 'x\u202ey', nl: 'p\nq' });
    const out = prettyLine(line);
    expect(hasUnsafeCharacters(out)).toBe(false);
    expect(out).not.toContain('\n');
    expect(out).toContain('a\\u001b[2Jb');
  });

  it('is one safe line for any input, JSON or not', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.dictionary(fc.string(), fc.jsonValue()).map((o) => JSON.stringify(o)),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (input) => {
          const out = prettyLine(input);
          expect(out).not.toMatch(/[\n\r]/);
          expect(hasUnsafeCharacters(out)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});
