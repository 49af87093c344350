import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SseEvent, SseParser } from './sse-parser.js';

/** Serializes events as the relay writes them, with the given line end. */
function serialize(events: readonly { event: string; data: string; id: string }[], eol: string): string {
  return events
    .map((e) => {
      const data = e.data
        .split('\n')
        .map((l) => `data: ${l}${eol}`)
        .join('');
      return `: keepalive${eol}id: ${e.id}${eol}event: ${e.event}${eol}${data}${eol}`;
    })
    .join('');
}

function parseInChunks(text: string, cuts: readonly number[]): SseEvent[] {
  const parser = new SseParser();
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: SseEvent[] = [];
  let from = 0;
  for (const p of [...points, text.length]) {
    out.push(...parser.push(text.slice(from, p)));
    from = p;
  }
  return out;
}

const noEol = fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s));
const eventArb = fc.record({
  event: fc.stringMatching(/^[a-z-]{1,12}$/),
  data: fc.array(noEol, { minLength: 1, maxLength: 3 }).map((ls) => ls.join('\n')),
  id: fc.stringMatching(/^[0-9]{1,6}$/),
});

describe('SseParser', () => {
  it('parses the events whatever the chunking and line ends (property)', () => {
    fc.assert(
      fc.property(
        fc.array(eventArb, { maxLength: 6 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat(), { maxLength: 10 }),
        (events, eol, cuts) => {
          const text = serialize(events, eol);
          expect(parseInChunks(text, cuts)).toEqual(events);
        },
      ),
    );
  });

  it('never throws on arbitrary text under the line cap and keeps ids as the last seen (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        const events = new SseParser({ maxLineChars: 1000 }).push(text);
        for (const e of events) expect(typeof e.data).toBe('string');
      }),
    );
  });

  it('dispatches only on a blank line, without data nothing, and names unnamed events message', () => {
    const p = new SseParser();
    expect(p.push('data: a\n')).toEqual([]);
    expect(p.push('\n')).toEqual([{ event: 'message', data: 'a', id: '' }]);
    expect(p.push('event: ready\n\n')).toEqual([]);
    expect(p.push('id: 7\nevent: x\ndata\n\n')).toEqual([{ event: 'x', data: '', id: '7' }]);
  });

  it('refuses a line over the cap instead of buffering it', () => {
    const p = new SseParser({ maxLineChars: 10 });
    expect(() => p.push('data: 0123456789')).toThrow(/over 10 characters/);
  });
});
