import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_WATCH_EVENT_BYTES, WatchLines } from './watch-lines.js';

const event = (type: string, rv: string, name: string) =>
  `${JSON.stringify({ type, object: { kind: 'Pod', metadata: { name, resourceVersion: rv } } })}\n`;

/** Cuts `text` at the given offsets. */
function cut(text: Buffer, offsets: number[]): Buffer[] {
  const at = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let last = 0;
  for (const o of [...at, text.length]) {
    out.push(text.subarray(last, o));
    last = o;
  }
  return out;
}

describe('WatchLines', () => {
  it('gives whole events and the last version, however the body is cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'), fc.nat(1e9)), {
          maxLength: 20,
        }),
        fc.array(fc.nat(10_000), { maxLength: 30 }),
        (events, offsets) => {
          const lines = events.map(([t, rv], i) => event(t, String(rv), `p${i}`));
          const body = Buffer.from(lines.join(''));
          const w = new WatchLines('7');
          const out = cut(body, offsets).flatMap((c) => w.push(c).map((b) => b.toString()));
          expect(out).toEqual(lines);
          expect(w.resourceVersion).toBe(events.length ? String(events.at(-1)![1]) : '7');
          expect(w.resumable).toBe(true);
        },
      ),
    );
  });

  it('holds a partial event back and drops it when the upstream is cut', () => {
    const w = new WatchLines(null);
    const whole = event('ADDED', '5', 'a');
    expect(w.push(Buffer.from(`${whole}{"type":"ADDED","obj`)).map(String)).toEqual([whole]);
    w.discardPartial();
    const next = event('MODIFIED', '6', 'a');
    expect(w.push(Buffer.from(next)).map(String)).toEqual([next]);
    expect(w.resourceVersion).toBe('6');
  });

  it('an ERROR event keeps the version; garbage or an oversized event turns tracking off, bytes kept', () => {
    const w = new WatchLines('3');
    w.push(Buffer.from('{"type":"ERROR","object":{"kind":"Status","code":410}}\n'));
    expect(w.resourceVersion).toBe('3');
    const garbage = Buffer.from('not json\n{"type":"ADDED"}\n');
    expect(Buffer.concat(w.push(garbage))).toEqual(garbage);
    expect(w.resumable).toBe(false);
    const big = new WatchLines(null);
    const chunk = Buffer.alloc(MAX_WATCH_EVENT_BYTES + 1, 0x61);
    expect(Buffer.concat(big.push(chunk)).equals(chunk)).toBe(true);
    expect(big.resumable).toBe(false);
  });

  it('never throws on arbitrary bytes and loses none', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 10 }), (chunks) => {
        const w = new WatchLines(null);
        const got: Buffer[] = [];
        for (const c of chunks) got.push(...w.push(Buffer.from(c)));
        const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        const out = Buffer.concat(got);
        // What was not given out is exactly the held partial event at the end.
        expect(all.subarray(0, out.length)).toEqual(out);
        if (!w.resumable) return;
        expect(all.subarray(out.length).includes(0x0a)).toBe(false);
      }),
    );
  });
});
