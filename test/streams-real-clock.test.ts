/**
 * The faulty-path harness driven by the real clock (not the fake one the unit tests use): mux over ARQ
 * through loss, reordering, duplication, jitter and a short blackout, in real time.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { realClock } from '../shared/clock.js';
import { ArqSession } from '../shared/net/arq/arq-session.js';
import type { MuxStream } from '../shared/net/mux/mux-stream.js';
import { muxOverArq } from '../shared/net/mux/transport.js';
import { faultyPath } from './helpers/faulty-path.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('mux over ARQ over the faulty path, real clock', () => {
  it('echoes 3 streams intact through 5% loss, reordering, duplication, jitter and a 500 ms blackout', async () => {
    const p = faultyPath(realClock, {
      seed: 5,
      loss: 0.05,
      reorder: 0.1,
      duplicate: 0.05,
      latencyMs: 3,
      jitterMs: 3,
    });
    const a = new ArqSession({
      conv: 3,
      mtu: 1392,
      clock: realClock,
      defer: setImmediate,
      output: p.ab.send,
    });
    const b = new ArqSession({
      conv: 3,
      mtu: 1392,
      clock: realClock,
      defer: setImmediate,
      output: p.ba.send,
    });
    p.ab.deliver = (d) => b.input(d);
    p.ba.deliver = (d) => a.input(d);
    const client = muxOverArq(a, { clock: realClock, role: 'client' });
    const server = muxOverArq(b, { clock: realClock, role: 'server' });
    server.on('stream', (s: MuxStream) => s.pipe(s));
    const keepAlive = setInterval(() => {}, 1_000);
    try {
      const jobs = [400_000, 700_000, 250_000].map(async (n) => {
        const data = randomBytes(n);
        const s = client.open();
        const back = new Promise<Buffer>((resolve, reject) => {
          const parts: Buffer[] = [];
          s.on('data', (c: Buffer) => parts.push(c));
          s.on('end', () => resolve(Buffer.concat(parts)));
          s.on('error', reject);
        });
        s.end(data);
        return { data, back: await back };
      });
      setTimeout(() => {
        const t = realClock.now();
        p.ab.addBlackout(t, t + 500);
        p.ba.addBlackout(t, t + 500);
      }, 100);
      for (const r of await Promise.all(jobs)) expect(sha(r.back)).toBe(sha(r.data));
      expect(p.ab.counters.lost + p.ba.counters.lost).toBeGreaterThan(0);
      expect(p.ab.counters.blackout + p.ba.counters.blackout).toBeGreaterThan(0);
    } finally {
      clearInterval(keepAlive);
      client.close();
      server.close();
      a.close();
      b.close();
      p.ab.close();
      p.ba.close();
    }
  }, 30_000);
});
