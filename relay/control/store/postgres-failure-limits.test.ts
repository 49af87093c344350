/**
 * The failed-registration limit kept in PostgreSQL: the same answers as the in-memory FailureLimiter for
 * any sequence of operations, one count for all replicas, atomic under concurrent failures, bounded.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { PostgresBackend } from '../../../test/helpers/store-backends.js';
import { type FailOutcome, type FailureLimits, localFailureLimits } from '../../ops/failure-limits.js';
import { FailureLimiter, type FailureLimiterOptions, type LimitEntry } from '../../ops/rate-limit.js';
import { PostgresStore } from './postgres.js';

const backend = new PostgresBackend();
beforeAll(() => backend.start(), 120_000);
afterAll(() => backend.stop());

const opened: PostgresStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

async function replicas(
  n: number,
  clock: FakeClock,
  options: FailureLimiterOptions,
): Promise<FailureLimits[]> {
  const connection = await backend.newDatabase();
  const stores = await Promise.all(Array.from({ length: n }, () => PostgresStore.open({ connection })));
  opened.push(...stores);
  return stores.map((s) => s.failureLimits(clock, options));
}

/** What a view says, without the window start (monotonic in memory, wall clock in PostgreSQL). */
const strip = (e: LimitEntry | null) => (e === null ? null : { ...e, windowStart: 0 });

describe('failed-registration limit in PostgreSQL', () => {
  it('answers as the in-memory limiter does, for any sequence of operations', async () => {
    const options = { max: 3, windowMs: 1000, maxEntries: 4 };
    const op = fc.oneof(
      fc.record({ kind: fc.constant('fail' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f') }),
      fc.record({ kind: fc.constant('limitOf' as const), key: fc.constantFrom('a', 'b', 'c') }),
      fc.record({ kind: fc.constant('failUnlessLimited' as const), key: fc.constantFrom('a', 'b') }),
      fc.record({ kind: fc.constant('clear' as const), key: fc.constantFrom('a', 'b') }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 700 }) }),
      fc.constant({ kind: 'clearAll' as const }),
    );
    const clock = new FakeClock();
    const [shared] = await replicas(1, clock, options);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        await shared!.clearAll();
        const local = localFailureLimits(new FailureLimiter(clock, options));
        for (const o of ops) {
          if (o.kind === 'advance') {
            clock.advance(o.ms);
            continue;
          }
          if (o.kind === 'clearAll') {
            expect((await shared!.clearAll()).map(strip)).toEqual((await local.clearAll()).map(strip));
            continue;
          }
          if (o.kind === 'failUnlessLimited') {
            const [got, want] = await Promise.all([
              shared!.failUnlessLimited(o.key),
              local.failUnlessLimited(o.key),
            ]);
            const view = (x: FailOutcome) =>
              'limited' in x ? { limited: strip(x.limited) } : { counted: strip(x.counted) };
            expect(view(got)).toEqual(view(want));
            continue;
          }
          const [got, want] = await Promise.all([shared![o.kind](o.key), local[o.kind](o.key)]);
          expect(strip(got)).toEqual(strip(want));
        }
        expect((await shared!.list()).map(strip)).toEqual((await local.list()).map(strip));
        expect(await shared!.size()).toBe(await local.size());
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('counts a source once across replicas: failures on both reach the limit on both', async () => {
    const clock = new FakeClock();
    const [a, b] = await replicas(2, clock, { max: 10, windowMs: 300_000, maxEntries: 100 });
    for (let i = 0; i < 5; i++) await a!.fail('192.0.2.7');
    for (let i = 0; i < 4; i++) await b!.fail('192.0.2.7');
    expect(await a!.limitOf('192.0.2.7')).toBeNull();
    expect((await b!.fail('192.0.2.7')).limited).toBe(true);
    expect(await a!.limitOf('192.0.2.7')).toMatchObject({
      failures: 10,
      limited: true,
      remainingMs: 300_000,
    });
    clock.advance(300_000);
    expect(await b!.limitOf('192.0.2.7')).toBeNull();
    expect(await a!.fail('192.0.2.7')).toMatchObject({ failures: 1, limited: false });
    expect((await b!.clear('192.0.2.7'))?.failures).toBe(1);
    expect(await a!.list()).toEqual([]);
  });

  it('counts every one of many concurrent failures on two replicas', async () => {
    const clock = new FakeClock();
    const [a, b] = await replicas(2, clock, { max: 1000, windowMs: 60_000, maxEntries: 100 });
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a! : b!).fail('198.51.100.1')));
    expect((await a!.list()).map((e) => e.failures)).toEqual([40]);
  });

  it('counts exactly max of many concurrent refusals on two replicas; the rest are limited', async () => {
    const clock = new FakeClock();
    const [a, b] = await replicas(2, clock, { max: 10, windowMs: 60_000, maxEntries: 100 });
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? a! : b!).failUnlessLimited('203.0.113.9')),
    );
    expect(outcomes.filter((o) => 'counted' in o)).toHaveLength(10);
    expect(outcomes.filter((o) => 'limited' in o)).toHaveLength(20);
    expect((await a!.list()).map((e) => e.failures)).toEqual([10]);
  });
});
