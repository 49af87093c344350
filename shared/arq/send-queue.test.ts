import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ArqStats, newArqStats } from './arq-options.js';
import { DatagramWriter } from './datagram-writer.js';
import { CMD_PUSH } from './segment.js';
import { flatSegment, SendQueue, segmentLength } from './send-queue.js';

describe('SendQueue', () => {
  it('cuts any sequence of writes into segments that reassemble to the same bytes, without copying', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 4000 }),
        (sizes, mss) => {
          const q = new SendQueue();
          const written = sizes.map((n) => randomBytes(n));
          for (const b of written) q.push(b);
          const total = sizes.reduce((a, b) => a + b, 0);
          expect(q.bytes).toBe(total);
          const out: Buffer[] = [];
          while (q.bytes > 0) {
            const seg = q.take(mss);
            expect(segmentLength(seg)).toBe(Math.min(mss, q.bytes + segmentLength(seg)));
            // Every piece is a view into one of the written buffers (same memory), never a copy.
            for (const piece of Array.isArray(seg) ? seg : [seg]) {
              expect(written.some((w) => w.buffer === piece.buffer)).toBe(true);
            }
            out.push(flatSegment(seg));
          }
          expect(Buffer.concat(out).equals(Buffer.concat(written))).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('DatagramWriter with a segment spanning several writes', () => {
  it('writes the same datagram bytes for a list of views as for one flat buffer', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 1, maxLength: 8 }), (sizes) => {
        const pieces = sizes.map((n) => randomBytes(n));
        const got: Buffer[][] = [[], []];
        const stats: ArqStats[] = [newArqStats(), newArqStats()];
        const writers = [0, 1].map(
          (i) => new DatagramWriter(5, 9, 4096, (d) => got[i]!.push(Buffer.from(d)), stats[i]!),
        );
        writers[0]!.put(CMD_PUSH, 10, 123, 7, 6, pieces);
        writers[1]!.put(CMD_PUSH, 10, 123, 7, 6, Buffer.concat(pieces));
        for (const w of writers) w.finish();
        expect(got[0]).toHaveLength(1);
        expect(got[0]![0]!.equals(got[1]![0]!)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});
