import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasUnsafeCharacters } from '../../shared/kit/cli/terminal-escape.js';
import { prettyLine } from './pretty-log.js';

describe('prettyLine', () => {
  it('writes time, level, message and the other fields as key=value', () => {
    const time = '2026-11-25T14:02:03.045Z';
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
      '2026-11-25T14:02:03.045Z WARN  relay listening url=https://127.0.0.1:8443 http={"maxConnections":10} note="two words"',
    );
  });

  it('writes a time in ms as ISO 8601 UTC, and an audit line with who and from where only', () => {
    const audit = {
      at: 'x',
      actor: 'psk:demo1',
      action: 'cluster.register',
      target: 'demo1',
      source: '10.0.0.9',
    };
    const line = JSON.stringify({ level: 30, time: 0, msg: 'audit cluster.register demo1', audit });
    expect(prettyLine(line)).toBe(
      '1970-01-01T00:00:00.000Z INFO  audit cluster.register demo1 actor=psk:demo1 source=10.0.0.9',
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
