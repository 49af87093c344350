import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_SSE_EVENT_CHARS, type SseEvent, SseParser } from './sse-parser.js';

/** Writes events as a server would, with the given line ending, plus comments between them. */
function serialize(events: SseEvent[], eol: string, comments: boolean): string {
  let out = comments ? `: keepalive${eol}` : '';
  for (const e of events) {
    if (e.id !== null) out += `id: ${e.id}${eol}`;
    out += `event: ${e.event}${eol}`;
    for (const line of e.data.split('\n')) out += `data: ${line}${eol}`;
    out += eol;
    if (comments) out += `:${eol}`;
  }
  return out;
}

/** Cuts `text` at the given offsets. */
function chunks(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let at = 0;
  for (const p of points) {
    out.push(text.slice(at, p));
    at = p;
  }
  out.push(text.slice(at));
  return out;
}

const noBreak = fc.string({ maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ''));
const field = noBreak.map((s) => s.replace(/^ /, '').replace(/\0/g, ''));
const event = fc.record({
  event: fc.constantFrom('cluster', 'cluster-deleted', 'ready', 'x y'),
  data: fc.array(noBreak, { minLength: 1, maxLength: 4 }).map((lines) => lines.join('\n')),
  id: fc.option(
    field.filter((s) => s.length > 0),
    { nil: null },
  ),
});

describe('SseParser', () => {
  it('returns what was sent, whatever the line endings and chunk boundaries', () => {
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 6 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 12 }),
        (events, eol, comments, cuts) => {
          const parser = new SseParser();
          const got = chunks(serialize(events, eol, comments), cuts).flatMap((c) => parser.push(c));
          // The last id seen carries over to later events without one (the standard's lastEventId).
          let last: string | null = null;
          const want = events.map((e) => {
            last = e.id ?? last;
            return { ...e, id: last };
          });
          expect(got).toEqual(want);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws on arbitrary text and dispatches only events with data', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 50 }), { maxLength: 10 }), (parts) => {
        const parser = new SseParser();
        for (const p of parts) for (const ev of parser.push(p)) expect(typeof ev.data).toBe('string');
      }),
    );
  });

  it('keeps the data of one event apart from the next, and reads a field without a space or value', () => {
    const parser = new SseParser();
    expect(parser.push('event:cluster\ndata:{"a":1}\n\ndata\n\nevent: ready\ndata: \n\n')).toEqual([
      { event: 'cluster', data: '{"a":1}', id: null },
      { event: 'message', data: '', id: null },
      { event: 'ready', data: '', id: null },
    ]);
  });

  it('drops an event over the size cap and goes on with the next', () => {
    const parser = new SseParser();
    const big = 'x'.repeat(MAX_SSE_EVENT_CHARS / 4);
    const out = parser.push(`event: cluster\n${`data: ${big}\n`.repeat(5)}\nevent: ready\ndata: ok\n\n`);
    expect(out).toEqual([{ event: 'ready', data: 'ok', id: null }]);
  });
});
