/**
 * The failed-registration limit kept in the PostgreSQL store, so every replica counts a source's failures
 * against the same limit. Same rule as the in-memory FailureLimiter (relay/ops/rate-limit.ts): a key's window
 * opens at its first failure and lasts `windowMs`; `max` failures in it limit the key until it ends. Times
 * are wall-clock milliseconds (replicas share no monotonic clock). Each failure is one atomic upsert that
 * also takes the next number of a sequence (`touched`: the order of failures across replicas); the table
 * keeps at most `maxEntries` keys (the least recently failed go first, which only lifts their limit).
 */
import type { Clock } from '../../../shared/clock.js';
import type { FailOutcome, FailureLimits } from '../../ops/failure-limits.js';
import type { FailureLimiterOptions, LimitEntry } from '../../ops/rate-limit.js';
import type { Tx } from './postgres-tx.js';

interface Row {
  key: string;
  window_start: number;
  count: number;
}

export class PgFailureLimits implements FailureLimits {
  readonly options: FailureLimiterOptions;
  readonly #connection: () => Promise<Tx>;
  readonly #serializable: <T>(body: (tx: Tx) => Promise<T>) => Promise<T>;
  readonly #clock: Clock;

  constructor(opts: {
    /** A query runner for single statements (the store's pool). */
    db: () => Promise<Tx>;
    /** Runs a body in one SERIALIZABLE transaction (the store's). */
    serializable: <T>(body: (tx: Tx) => Promise<T>) => Promise<T>;
    clock: Clock;
    options: FailureLimiterOptions;
  }) {
    this.#connection = opts.db;
    this.#serializable = opts.serializable;
    this.#clock = opts.clock;
    this.options = opts.options;
  }

  #view(r: Row, now: number): LimitEntry {
    return {
      key: r.key,
      failures: r.count,
      windowStart: r.window_start,
      remainingMs: Math.max(0, r.window_start + this.options.windowMs - now),
      limited: r.count >= this.options.max,
    };
  }

  /** Windows that started at or before this have ended. */
  #endedBefore(now: number): number {
    return now - this.options.windowMs;
  }

  async limitOf(key: string): Promise<LimitEntry | null> {
    return this.#limitOf(await this.#connection(), key);
  }

  async #limitOf(tx: Tx, key: string): Promise<LimitEntry | null> {
    const now = this.#clock.wallNow();
    const r = await tx.one<Row>(
      'SELECT key, window_start, count FROM failure_counts WHERE key = $1 AND window_start > $2 AND count >= $3',
      [key, this.#endedBefore(now), this.options.max],
    );
    return r ? this.#view(r, now) : null;
  }

  async fail(key: string): Promise<LimitEntry> {
    return this.#fail(await this.#connection(), key);
  }

  async failUnlessLimited(key: string): Promise<FailOutcome> {
    return this.#serializable(async (tx) => {
      const limited = await this.#limitOf(tx, key);
      return limited ? { limited } : { counted: await this.#fail(tx, key) };
    });
  }

  async #fail(db: Tx, key: string): Promise<LimitEntry> {
    const now = this.#clock.wallNow();
    const r = (await db.one<Row>(
      `INSERT INTO failure_counts (key, window_start, count, touched)
         VALUES ($1, $2, 1, nextval('failure_counts_touch'))
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN failure_counts.window_start <= $3 THEN 1 ELSE failure_counts.count + 1 END,
         window_start = CASE WHEN failure_counts.window_start <= $3 THEN $2 ELSE failure_counts.window_start END,
         touched = nextval('failure_counts_touch')
       RETURNING key, window_start, count`,
      [key, now, this.#endedBefore(now)],
    ))!;
    await db.run(
      `DELETE FROM failure_counts WHERE window_start <= $1
         OR key IN (SELECT key FROM failure_counts ORDER BY touched DESC OFFSET $2)`,
      [this.#endedBefore(now), this.options.maxEntries],
    );
    return this.#view(r, now);
  }

  async list(): Promise<LimitEntry[]> {
    const now = this.#clock.wallNow();
    const rows = await (await this.#connection()).all<Row>(
      'SELECT key, window_start, count FROM failure_counts WHERE window_start > $1 ORDER BY touched',
      [this.#endedBefore(now)],
    );
    return rows.map((r) => this.#view(r, now));
  }

  async clear(key: string): Promise<LimitEntry | null> {
    const now = this.#clock.wallNow();
    const r = await (await this.#connection()).one<Row>(
      'DELETE FROM failure_counts WHERE key = $1 RETURNING key, window_start, count',
      [key],
    );
    return r && r.window_start > this.#endedBefore(now) ? this.#view(r, now) : null;
  }

  async clearAll(): Promise<LimitEntry[]> {
    const now = this.#clock.wallNow();
    const rows = await (await this.#connection()).all<Row>(
      'DELETE FROM failure_counts RETURNING key, window_start, count, touched',
    );
    return rows.filter((r) => r.window_start > this.#endedBefore(now)).map((r) => this.#view(r, now));
  }

  async size(): Promise<number> {
    const r = await (await this.#connection()).one<{ n: number }>(
      'SELECT COUNT(*) AS n FROM failure_counts WHERE window_start > $1',
      [this.#endedBefore(this.#clock.wallNow())],
    );
    return r?.n ?? 0;
  }
}
