/**
 * Transactions of the PostgreSQL store. Every multi-row change runs SERIALIZABLE, so a check and the
 * write that depends on it (a PSK's single use, the last admin key, the cluster cap, the next tunnel
 * address) behave as if the transactions of every replica ran one after another, as SQLite's single
 * writer does. A transaction PostgreSQL aborts to keep that promise (serialization failure, deadlock,
 * or a unique-key race it reports as such) is run again from the start, a bounded number of times.
 *
 * Transactions that all write one hot row (the address pool's high-water mark, the free list) or all count the
 * same rows (the cluster cap) would abort each other under a burst (16 registrations at once exhausted the
 * attempts): they take the table lock `lockFirst` as their first statement instead, before PostgreSQL takes the
 * transaction's snapshot, so they run one after another and never conflict among themselves.
 */
import type { Pool, QueryResult, QueryResultRow } from 'pg';

/** Attempts per transaction before its last error is passed on. */
export const TX_ATTEMPTS = 12;
/** Backoff between attempts: up to this many milliseconds, doubled each time from 2, with jitter. */
const TX_BACKOFF_MAX_MS = 200;
/** serialization_failure, deadlock_detected, unique_violation (a concurrent insert of the same key). */
const RETRYABLE = new Set(['40001', '40P01', '23505']);

/** The queries a transaction body may run, on the transaction's one connection. */
export interface Tx {
  /** First row, or undefined. */
  one<R extends QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<R | undefined>;
  all<R extends QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** Number of rows changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

/** What txOf needs: a pool (one statement per query) or one checked-out connection (a transaction). */
export interface Queryable {
  query<R extends QueryResultRow>(sql: string, params: unknown[]): Promise<QueryResult<R>>;
}

export function txOf(client: Queryable): Tx {
  async function one<R extends QueryResultRow>(
    sql: string,
    params: readonly unknown[] = [],
  ): Promise<R | undefined> {
    const result: QueryResult<R> = await client.query<R>(sql, [...params]);
    return result.rows[0];
  }
  async function all<R extends QueryResultRow>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    const result: QueryResult<R> = await client.query<R>(sql, [...params]);
    return result.rows;
  }
  async function run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await client.query(sql, [...params])).rowCount ?? 0;
  }
  return { one, all, run };
}

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

function backoff(attempt: number): Promise<void> {
  const cap = Math.min(TX_BACKOFF_MAX_MS, 2 ** attempt);
  return new Promise((r) => setTimeout(r, Math.ceil(Math.random() * cap)));
}

/** A table whose EXCLUSIVE lock a transaction may take first (see the file comment). */
export type FirstLock = 'address_pool';

/** Runs `body` in one SERIALIZABLE transaction, again from the start when PostgreSQL aborts it for a race. */
export async function serializable<T>(
  pool: Pool,
  body: (tx: Tx) => Promise<T>,
  opts: { lockFirst?: FirstLock } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE');
      // LOCK takes no snapshot: the body's first query does, after the lock is held.
      if (opts.lockFirst) await client.query(`LOCK TABLE ${opts.lockFirst} IN EXCLUSIVE MODE`);
      const result = await body(txOf(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      if (!isRetryable(err) || attempt >= TX_ATTEMPTS) throw err;
    } finally {
      client.release(broken);
    }
    await backoff(attempt);
  }
}
