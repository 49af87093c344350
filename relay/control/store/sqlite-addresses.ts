/**
 * Tunnel address allocation inside a store transaction: the lowest released host number first
 * (free list), otherwise one above the high-water mark. O(log n) either way; a number is never
 * handed out while a cluster holds it.
 */
import type Database from 'better-sqlite3';
import { TunnelError } from '../../../shared/errors.js';
import { FIRST_AGENT_INDEX, LAST_AGENT_INDEX } from './addresses.js';

export class AddressPool {
  readonly #statements;

  constructor(db: Database.Database) {
    this.#statements = {
      freeMin: db.prepare<[], { i: number | null }>('SELECT MIN(addr_index) AS i FROM free_addresses'),
      freeTake: db.prepare('DELETE FROM free_addresses WHERE addr_index = ?'),
      freePut: db.prepare('INSERT INTO free_addresses (addr_index) VALUES (?) ON CONFLICT DO NOTHING'),
      bumpHigh: db.prepare<[], { high: number }>(
        'UPDATE address_pool SET high = high + 1 WHERE id = 1 RETURNING high',
      ),
      assign: db.prepare('UPDATE clusters SET addr_index = ?, preshared_key = ? WHERE name = ?'),
      held: db.prepare<[string], { addr_index: number | null }>(
        'SELECT addr_index FROM clusters WHERE name = ?',
      ),
    };
  }

  /** Gives the cluster an address and its per-pair preshared key. */
  allocate(name: string, presharedKey: string): void {
    this.#statements.assign.run(this.take(), presharedKey, name);
  }

  /** Takes the next host number (the caller stores it: a cluster's replica agent, store/agent-replicas.ts). */
  take(): number {
    let i = this.#statements.freeMin.get()?.i ?? null;
    if (i !== null) {
      this.#statements.freeTake.run(i);
    } else {
      i = this.#statements.bumpHigh.get()!.high;
      if (i < FIRST_AGENT_INDEX || i > LAST_AGENT_INDEX) {
        throw new TunnelError('LIMIT_EXCEEDED', 'tunnel addresses: all of 100.64.0.0/10 is allocated');
      }
    }
    return i;
  }

  /** Returns a host number taken with `take` to the free list. */
  put(index: number): void {
    this.#statements.freePut.run(index);
  }

  /** Returns the cluster's host number (if any) to the free list; the caller clears the column. */
  release(name: string): void {
    const r = this.#statements.held.get(name);
    if (r && r.addr_index !== null) this.#statements.freePut.run(r.addr_index);
  }
}
