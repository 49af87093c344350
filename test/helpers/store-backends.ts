/**
 * The stores the store test suite runs against: SQLite in memory, and PostgreSQL on a throw-away
 * server (test/helpers/postgres.ts) with a fresh database for every store opened.
 */

import { PostgresStore } from '../../relay/control/store/postgres.js';
import { SqliteStore } from '../../relay/control/store/sqlite.js';
import type { Store, StoreLimits } from '../../relay/control/store/types.js';
import type { PostgresConnection } from '../../relay/ops/config/postgres-connection.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './postgres.js';

export interface StoreBackend {
  readonly name: string;
  /** A new, empty store. */
  open(limits?: Partial<StoreLimits>): Promise<Store>;
}

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  open: async (limits = {}) => new SqliteStore(':memory:', limits),
};

export class PostgresBackend implements StoreBackend {
  readonly name = 'postgres';
  #server: ThrowawayPostgres | null = null;
  #databases = 0;

  async start(): Promise<void> {
    this.#server = await startThrowawayPostgres();
  }

  get server(): ThrowawayPostgres {
    if (!this.#server) throw new Error('PostgresBackend: start() first');
    return this.#server;
  }

  /** A new empty database on the server. */
  newDatabase(): Promise<PostgresConnection> {
    this.#databases += 1;
    return this.server.createDatabase(`store_test_${this.#databases}`);
  }

  async open(limits: Partial<StoreLimits> = {}): Promise<Store> {
    return PostgresStore.open({ connection: await this.newDatabase(), limits });
  }

  async stop(): Promise<void> {
    await this.#server?.stop();
    this.#server = null;
  }
}
