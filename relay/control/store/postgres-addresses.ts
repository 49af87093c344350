/**
 * Tunnel address allocation inside a PostgreSQL store transaction, the same rule as the SQLite store
 * (sqlite-addresses.ts): the lowest released host number first, otherwise one above the high-water
 * mark. The transaction is SERIALIZABLE, so two replicas never hand out the same number.
 */
import { TunnelError } from '../../../shared/errors.js';
import { FIRST_AGENT_INDEX, LAST_AGENT_INDEX } from './addresses.js';
import type { Tx } from './postgres-tx.js';

/** Gives the cluster an address and its per-pair preshared key. */
export async function allocateAddress(tx: Tx, name: string, presharedKey: string): Promise<void> {
  await tx.run('UPDATE clusters SET addr_index = $1, preshared_key = $2 WHERE name = $3', [
    await takeAddress(tx),
    presharedKey,
    name,
  ]);
}

/** Takes the next host number (the caller stores it: a cluster's replica agent, store/agent-replicas.ts). */
export async function takeAddress(tx: Tx): Promise<number> {
  const free = await tx.one<{ i: number }>(
    'DELETE FROM free_addresses WHERE addr_index = (SELECT MIN(addr_index) FROM free_addresses) RETURNING addr_index AS i',
  );
  let i = free?.i ?? null;
  if (i === null) {
    i = (await tx.one<{ high: number }>(
      'UPDATE address_pool SET high = high + 1 WHERE id = 1 RETURNING high',
    ))!.high;
    if (i < FIRST_AGENT_INDEX || i > LAST_AGENT_INDEX) {
      throw new TunnelError('LIMIT_EXCEEDED', 'tunnel addresses: all of 100.64.0.0/10 is allocated');
    }
  }
  return Number(i);
}

/** Returns the cluster's host number (if any) to the free list; the caller clears the column. */
export async function releaseAddress(tx: Tx, name: string): Promise<void> {
  await tx.run(
    `INSERT INTO free_addresses (addr_index)
       SELECT addr_index FROM clusters WHERE name = $1 AND addr_index IS NOT NULL ON CONFLICT DO NOTHING`,
    [name],
  );
}
