/**
 * A relay-mode replica's place in the fleet: the store must be the fleet's PostgreSQL, its certificate must be
 * the one the hub replicas recorded (agents pin it, and the hub replicas must present it to this replica), and its
 * membership row (mode `relay`, no agent locations) feeds the hub pool each heartbeat.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { TunnelError } from '../../../shared/errors.js';
import { PostgresStore } from '../../control/store/postgres.js';
import type { Store } from '../../control/store/types.js';
import type { MeshConfig } from '../../ops/config/mesh-settings.js';
import { ReplicaMembership } from '../mesh/replica-membership.js';
import { HubPool } from './hub-pool.js';

export interface TierFleet {
  store: PostgresStore;
  pool: HubPool;
  membership: ReplicaMembership;
}

export interface TierFleetInput {
  store: Store;
  /** What the store is called in errors. */
  storeName: string;
  caPin: string;
  mesh: MeshConfig;
  log: Logger;
}

/** BAD_CONFIG when the hub replicas recorded another certificate pin than this replica's. */
async function checkPin(store: PostgresStore, caPin: string, storeName: string, log: Logger): Promise<void> {
  const fleet = await store.meshTables().fleet();
  if (fleet === null) {
    log.warn(
      { store: storeName },
      'mesh: no hub replica has started on this store yet; not ready until one is',
    );
    return;
  }
  if (fleet.caPin !== caPin) {
    throw new TunnelError(
      'BAD_CONFIG',
      `tls-cert: this replica's certificate pin ${caPin} is not the fleet's ${fleet.caPin} ` +
        `(stored in ${storeName}); give every replica the same --tls-cert and --tls-key`,
    );
  }
}

export async function joinTierFleet(i: TierFleetInput): Promise<TierFleet> {
  if (!(i.store instanceof PostgresStore)) {
    throw new TunnelError('BAD_CONFIG', "store: --mode relay needs the fleet's postgres:// --store");
  }
  await checkPin(i.store, i.caPin, i.storeName, i.log);
  const pool = new HubPool({ caPin: i.caPin });
  const membership = new ReplicaMembership({
    id: randomBytes(8).toString('hex'),
    mode: 'relay',
    tables: i.store.meshTables(),
    hooks: null,
    deadAfterMs: i.mesh.deadAfterMs,
    log: i.log.child({ component: 'mesh' }),
    onHeartbeat: (view) => pool.update(view),
  });
  return { store: i.store, pool, membership };
}
