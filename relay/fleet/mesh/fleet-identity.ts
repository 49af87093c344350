/**
 * The fleet identity check. Agents pin the relay's TLS certificate and learn the hub's WireGuard public key at
 * registration, from whichever replica answers; they must find the same ones on every replica they reach later.
 * The first replica to start on a PostgreSQL store writes both into it; every later start compares its own and
 * refuses to start (BAD_CONFIG) when either differs, naming the stored value and what to give every replica.
 */
import { TunnelError } from '../../../shared/errors.js';
import type { FleetIdentity, PgMeshTables } from '../../control/store/postgres-mesh.js';

/** Writes this replica's identity as the fleet's if none is stored; BAD_CONFIG when the stored one differs. */
export async function checkFleetIdentity(
  tables: PgMeshTables,
  mine: FleetIdentity,
  storeName: string,
): Promise<FleetIdentity> {
  const fleet = await tables.claimFleet(mine);
  if (fleet.hubPublicKey !== mine.hubPublicKey) {
    throw new TunnelError(
      'BAD_CONFIG',
      `hub-key-file: this replica's hub public key ${mine.hubPublicKey} is not the fleet's ${fleet.hubPublicKey} ` +
        `(stored in ${storeName}); give every replica the same --hub-key-file`,
    );
  }
  if (fleet.caPin !== mine.caPin) {
    throw new TunnelError(
      'BAD_CONFIG',
      `tls-cert: this replica's certificate pin ${mine.caPin} is not the fleet's ${fleet.caPin} ` +
        `(stored in ${storeName}); give every replica the same --tls-cert and --tls-key`,
    );
  }
  return fleet;
}
