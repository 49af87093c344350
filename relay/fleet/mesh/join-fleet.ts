/**
 * A relay's start on a PostgreSQL store as one replica of a fleet: the fleet identity check (fleet-identity.ts),
 * then, with --mesh-key-file, the mesh node that joins the membership once the TLS port listens.
 */
import type { Logger } from 'pino';
import { keyToBase64 } from '../../../shared/keys.js';
import type { RelayHooks } from '../../control/model/hooks.js';
import type { ReservedKeys } from '../../control/model/reserved-keys.js';
import { PostgresStore } from '../../control/store/postgres.js';
import type { Store } from '../../control/store/types.js';
import type { StoreConfig } from '../../ops/config/config-store.js';
import type { MeshConfig } from '../../ops/config/mesh-settings.js';
import { describeTarget } from '../../ops/config/postgres-url.js';
import { checkFleetIdentity } from './fleet-identity.js';
import { MeshNode } from './mesh-node.js';

export interface FleetStart {
  store: Store;
  storeConfig: StoreConfig;
  mesh: MeshConfig;
  hubPublicKey: Buffer;
  /** The pin agents are given; null behind a terminator with no --public-ca-file. */
  caPin: string | null;
  reservedKeys: ReservedKeys;
}

/** Checks (and on the first start records) the fleet identity; nothing for a store no replica shares. */
export async function checkFleet(f: FleetStart): Promise<void> {
  if (!(f.store instanceof PostgresStore) || f.storeConfig.kind !== 'postgres') return;
  const fleet = await checkFleetIdentity(
    f.store.meshTables(),
    { hubPublicKey: keyToBase64(f.hubPublicKey), caPin: f.caPin ?? 'none' },
    describeTarget(f.storeConfig.target),
  );
  f.reservedKeys.add(Buffer.from(fleet.hubPublicKey, 'base64'));
}

/** The mesh node of this replica, or null without --mesh-key-file (or on a store no replica shares). */
export function meshNodeOf(f: FleetStart, hooks: RelayHooks, log: Logger): MeshNode | null {
  const key = f.mesh.key;
  if (!(f.store instanceof PostgresStore) || key === null || f.caPin === null) return null;
  return new MeshNode({
    tables: f.store.meshTables(),
    config: { ...f.mesh, key },
    caPin: f.caPin,
    hooks,
    log,
  });
}
