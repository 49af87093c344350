/**
 * The paged reads of both stores (Store.clusterPage, accessKeyPage, auditPage): one SELECT each with a keyset
 * (`WHERE key > last ORDER BY key LIMIT n + 1`, never OFFSET), so a page costs the same wherever it starts and a
 * row added or removed between two pages makes no other row repeat or go missing. The one extra row read says
 * whether more remain. Cluster names compare byte for byte in both stores (SQLite's BINARY collation,
 * PostgreSQL's "C": migration 9 indexes them so), as a client comparing names does.
 */
import { CLUSTER_COLS, KEY_COLS } from './sqlite-rows.js';
import type { AccessKeyCursor, AuditPageQuery, ClusterPageQuery, Page } from './types.js';

export type Dialect = 'sqlite' | 'postgres';

export interface SqlQuery {
  sql: string;
  params: Array<string | number>;
}

/** Numbers the placeholders of one statement in the dialect's syntax. */
function placeholders(dialect: Dialect): () => string {
  let n = 0;
  return () => (dialect === 'sqlite' ? '?' : `$${++n}`);
}

/** Builds `SELECT ... WHERE a AND b ... ORDER BY ... LIMIT` with its parameters in order. */
class Select {
  readonly #next: () => string;
  readonly #where: string[] = [];
  readonly #params: Array<string | number> = [];

  constructor(dialect: Dialect) {
    this.#next = placeholders(dialect);
  }

  /** Adds `condition`, with `?` standing for the placeholder of each of `values` in turn. */
  where(condition: string, ...values: Array<string | number>): this {
    this.#where.push(condition.replace(/\?/g, () => this.#next()));
    this.#params.push(...values);
    return this;
  }

  sql(head: string, order: string, limit: number): SqlQuery {
    const where = this.#where.length === 0 ? '' : ` WHERE ${this.#where.join(' AND ')}`;
    const sql = `${head}${where} ORDER BY ${order} LIMIT ${this.#next()}`;
    return { sql, params: [...this.#params, limit + 1] };
  }
}

export function clusterPageSql(dialect: Dialect, q: ClusterPageQuery): SqlQuery {
  const name = dialect === 'postgres' ? 'name COLLATE "C"' : 'name';
  const select = new Select(dialect);
  if (q.group !== undefined) select.where('grp = ?', q.group);
  if (q.status !== undefined) select.where('status = ?', q.status);
  if (q.after !== null) select.where(`${name} > ?`, q.after);
  return select.sql(`SELECT ${CLUSTER_COLS} FROM clusters`, name, q.limit);
}

export function accessKeyPageSql(
  dialect: Dialect,
  q: { limit: number; after: AccessKeyCursor | null },
): SqlQuery {
  const select = new Select(dialect);
  if (q.after !== null) select.where('(created_at, id) > (?, ?)', q.after.createdAt, q.after.id);
  return select.sql(`SELECT ${KEY_COLS} FROM access_keys`, 'created_at, id', q.limit);
}

export function auditPageSql(dialect: Dialect, q: AuditPageQuery): SqlQuery {
  const select = new Select(dialect);
  if (q.before !== null) select.where('id < ?', q.before);
  if (q.since !== undefined) select.where('at >= ?', q.since);
  if (q.actor !== undefined) select.where('actor = ?', q.actor);
  if (q.target !== undefined) select.where('target = ?', q.target);
  if (q.action !== undefined) select.where('action = ?', q.action);
  return select.sql('SELECT id, at, actor, action, target, source, detail FROM audit', 'id DESC', q.limit);
}

/** The page of `rows` (read with LIMIT limit + 1): the first `limit`, and the last one's key when more remain. */
export function pageOf<T, K>(rows: T[], limit: number, keyOf: (item: T) => K): Page<T, K> {
  if (rows.length <= limit) return { items: rows, next: null };
  const items = rows.slice(0, limit);
  return { items, next: keyOf(items[items.length - 1]!) };
}
