/**
 * What a hub-mode relay serves with (RelayContext): the hub's WireGuard key (created in the data dir on first
 * start unless --hub-key-file names the fleet's), the store, the fleet identity check and the mesh node on a
 * PostgreSQL store, the hooks, metrics, limits and drain state.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import type { KeyPair } from '../../shared/keys.js';
import type { OnModeFixed } from '../../shared/kit/secret-file.js';
import type { RelayContext } from '../context/context.js';
import { kubeconfigMintLimiter } from '../control/api/kubeconfig-mint-limit.js';
import { RelayHooks } from '../control/model/hooks.js';
import { ReservedKeys } from '../control/model/reserved-keys.js';
import { PostgresStore } from '../control/store/postgres.js';
import type { Store } from '../control/store/types.js';
import type { HubUdp } from '../data/udp/hub-udp.js';
import { DrainState } from '../fleet/drain.js';
import { checkFleet, type FleetStart, meshNodeOf } from '../fleet/mesh/join-fleet.js';
import type { RelayConfig } from '../ops/config/config.js';
import { describeTarget } from '../ops/config/postgres-url.js';
import { localFailureLimits } from '../ops/failure-limits.js';
import { loadHubKey } from '../ops/hub-key.js';
import { Metrics } from '../ops/metrics.js';
import { FailureLimiter } from '../ops/rate-limit.js';
import type { UndoStack } from '../ops/undo-stack.js';
import { ensureDataDir } from './identity.js';
import { REGISTER_FAILURES } from './limits.js';
import { openStore } from './store-open.js';
import { onDisk, type TlsTrust } from './tls-trust.js';

export interface HubContextInput {
  config: RelayConfig;
  clock: Clock;
  log: Logger;
  onModeFixed: OnModeFixed;
  trust: TlsTrust;
  udp: HubUdp | null;
  /** A store to use instead of the one the config names (tests). */
  store: Store | undefined;
  undo: UndoStack;
  /** The URL the relay is bound to, once it listens. */
  boundUrl(): string;
}

export interface HubContext {
  ctx: RelayContext;
  hub: KeyPair;
}

async function storeFor(i: HubContextInput): Promise<Store> {
  const store =
    i.store ??
    (await i.undo.guard(() =>
      openStore(i.config, {
        onModeFixed: i.onModeFixed,
        onStoreError: (message) => i.log.warn({ code: 'STORE_CONNECTION' }, message),
      }),
    ));
  i.undo.push(() => store.close());
  if (i.config.store.kind === 'postgres')
    i.log.info({ store: describeTarget(i.config.store.target) }, 'store: PostgreSQL');
  return store;
}

export async function hubContext(i: HubContextInput): Promise<HubContext> {
  const { config, clock, log, trust } = i;
  const hub = await i.undo.guard(async () =>
    onDisk('data-dir', config.dataDir, () => {
      ensureDataDir(config.dataDir);
      return loadHubKey(config, i.onModeFixed);
    }),
  );
  const store = await storeFor(i);
  const reservedKeys = new ReservedKeys([hub.publicKey]);
  const fleet: FleetStart = {
    store,
    storeConfig: config.store,
    mesh: config.mesh,
    hubPublicKey: hub.publicKey,
    caPin: trust.pin,
    reservedKeys,
  };
  await i.undo.guard(() => checkFleet(fleet));
  const hooks = new RelayHooks(store);
  const ctx: RelayContext = {
    store,
    clock,
    config,
    hooks,
    log,
    metrics: new Metrics(),
    limiter: {
      bySource:
        store instanceof PostgresStore
          ? store.failureLimits(clock, REGISTER_FAILURES)
          : localFailureLimits(new FailureLimiter(clock, REGISTER_FAILURES)),
      kubeconfigMints: kubeconfigMintLimiter(clock),
    },
    hubPublicKey: hub.publicKey,
    reservedKeys,
    mesh: meshNodeOf(fleet, hooks, log),
    caPin: trust.pin,
    caPem: trust.pem,
    publicUrl: () => config.publicUrl ?? i.boundUrl(),
    drain: new DrainState(clock),
    udp: i.udp,
  };
  return { ctx, hub };
}
