/**
 * `tunnel-client join`, the library half: generate the key pair, register it with the bootstrap secret
 * (a cluster PSK: Accepted at once; an org-wide bootstrap token: Pending), and save the state dir.
 * The bootstrap secret is used for this one call and never stored.
 */
import { TunnelError } from '../../shared/errors.js';
import { keyToBase64 } from '../../shared/keys.js';
import type { AgentApi } from './api.js';
import { generateAgentKeyPair } from './keys.js';
import { type StateDir, stateDirFlag } from './state-dir.js';
import type { AgentState } from './types.js';

export interface JoinParams {
  readonly relay: string;
  readonly cluster: string;
  readonly caPin: string | null;
  readonly caFile: string | null;
  readonly agentVersion: string;
  readonly upstream: string | null;
  readonly allow: readonly string[];
  readonly claims: Readonly<Record<string, string>>;
  readonly valuesFiles: readonly string[];
}

export async function register(
  stateDir: StateDir,
  api: AgentApi,
  bootstrapSecret: string,
  params: JoinParams,
  now: () => Date = () => new Date(),
): Promise<AgentState> {
  if (stateDir.hasRegistration()) {
    const existing = stateDir.readState();
    throw new TunnelError(
      'CONFLICT',
      `state directory ${stateDir.dir} already holds the registration of cluster ${existing.cluster}; run 'tunnel-client unjoin${stateDirFlag(stateDir.dir)}' first or pass another --state-dir`,
    );
  }
  const keys = await generateAgentKeyPair();
  const publicKey = keyToBase64(keys.publicKey);
  const res = await api.register(bootstrapSecret, {
    cluster: params.cluster,
    publicKey,
    agentVersion: params.agentVersion,
    claims: Object.keys(params.claims).length > 0 ? { ...params.claims } : undefined,
  });
  if (res.cluster !== params.cluster || typeof res.agentCredential !== 'string') {
    throw new TunnelError(
      'RELAY_BAD_RESPONSE',
      `relay registered cluster ${String(res.cluster)}, not ${params.cluster}`,
    );
  }
  const state: AgentState = {
    version: 1,
    relay: params.relay,
    cluster: params.cluster,
    caPin: params.caPin,
    caFile: params.caFile,
    publicKey,
    agentVersion: params.agentVersion,
    upstream: params.upstream,
    allow: [...params.allow],
    claims: { ...params.claims },
    valuesFiles: [...params.valuesFiles],
    status: res.status,
    tunnel: res.tunnel ?? null,
    registeredAt: now().toISOString(),
  };
  stateDir.saveKeyAndCredential(keyToBase64(keys.privateKey), res.agentCredential);
  stateDir.saveState(state);
  return state;
}
