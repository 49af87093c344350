/** `tunnel-relay manifests relay` flags into RelayManifestOptions (each bad value: BAD_INPUT naming the flag). */

import { TunnelError } from '../../../shared/errors.js';
import { shown } from '../../../shared/kit/cli/parsers.js';
import { DRAIN_GRACE_RANGE_S } from '../../ops/config/config.js';
import { DEFAULT_NAMESPACE, defaultImage, type SERVICE_TYPES } from './flag-values.js';
import { parseQuantity } from './quantity.js';
import { RELAY_DEFAULT_RESOURCES, type RelayManifestOptions } from './relay-manifests.js';
import { type ResourceFlags, resolveResources } from './resources.js';

export const MAX_REPLICAS = 20;

export interface RelayFlags extends ResourceFlags {
  publicUrl: string;
  namespace?: string;
  image?: string;
  replicas?: string;
  store?: 'sqlite' | 'postgres';
  storeSecret?: string;
  tlsSecret?: string;
  hubKeySecret?: string;
  meshKeySecret?: string;
  drainGrace?: string;
  udpPort?: number | 'off';
  udpPublicEndpoint?: string;
  stunPort?: number | 'off';
  serviceType?: (typeof SERVICE_TYPES)[number];
  storageSize?: string;
}

export function parseReplicas(value: string): number {
  const n = /^[1-9]\d{0,2}$/.test(value) ? Number(value) : Number.NaN;
  if (n >= 1 && n <= MAX_REPLICAS) return n;
  throw new TunnelError(
    'BAD_INPUT',
    `--replicas ${shown(value)} is not a whole number from 1 to ${MAX_REPLICAS}`,
  );
}

export function parseDrainGrace(value: string): number {
  const { min, max } = DRAIN_GRACE_RANGE_S;
  const n = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (n >= min && n <= max) return n;
  throw new TunnelError(
    'BAD_INPUT',
    `--drain-grace ${shown(value)} is not whole seconds from ${min} to ${max}`,
  );
}

export function relayOptions(flags: RelayFlags): RelayManifestOptions {
  if (flags.udpPublicEndpoint !== undefined && flags.udpPort === 'off') {
    throw new TunnelError(
      'BAD_INPUT',
      '--udp-public-endpoint only applies while --udp-port is on (it is off)',
    );
  }
  if (!flags.publicUrl.startsWith('https://')) {
    throw new TunnelError(
      'BAD_INPUT',
      `--public-url ${shown(flags.publicUrl)} must be https://: agents only speak TLS`,
    );
  }
  const port = (v: number | 'off' | undefined, dflt: number) => (v === 'off' ? null : (v ?? dflt));
  const replicas = flags.replicas === undefined ? 1 : parseReplicas(flags.replicas);
  return {
    namespace: flags.namespace ?? DEFAULT_NAMESPACE,
    image: flags.image ?? defaultImage(),
    publicUrl: flags.publicUrl,
    replicas,
    store: flags.store ?? 'sqlite',
    storeSecret: flags.storeSecret ?? 'tunnel-relay-store',
    tlsSecret: flags.tlsSecret ?? null,
    hubKeySecret: flags.hubKeySecret ?? 'tunnel-relay-hub-key',
    meshKeySecret: flags.meshKeySecret ?? 'tunnel-relay-mesh-key',
    drainGraceSeconds:
      flags.drainGrace === undefined ? DRAIN_GRACE_RANGE_S.default : parseDrainGrace(flags.drainGrace),
    // A fleet too: each replica's UDP port gets its own Service (relay-fleet-udp.ts).
    udpPort: port(flags.udpPort, 51820),
    udpPublicEndpoint: flags.udpPublicEndpoint ?? null,
    stunPort: port(flags.stunPort, 3478),
    serviceType: flags.serviceType ?? 'LoadBalancer',
    storageSize: parseQuantity(flags.storageSize ?? '1Gi', '--storage-size').text,
    resources: resolveResources(flags, RELAY_DEFAULT_RESOURCES),
  };
}
