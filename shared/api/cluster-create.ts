/**
 * POST /api/v1/clusters (a new cluster) and POST /api/v1/clusters/NAME/psk (a new bootstrap PSK): what the caller
 * sends, and the cluster with its bootstrap (the PSK and the join and install commands) the relay answers.
 */
import { type Static, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';
import { Cluster } from './cluster.js';
import { closed, DurationText } from './schema-parts.js';

/** The agent's default upstream written into the join command (`--upstream`), http(s)://HOST[:PORT]. */
const UpstreamText = Type.String({ maxLength: 2048 });

export const CreateClusterBody = Type.Object(
  {
    name: Type.String({ maxLength: 253 }),
    group: Type.Optional(Type.String({ maxLength: 253 })),
    displayName: Type.Optional(Type.String({ maxLength: BODY_LIMITS.displayNameMax })),
    pskTtl: Type.Optional(DurationText),
    upstream: Type.Optional(UpstreamText),
    /** Agent keys the cluster's PSK admits, 1..10 (default 1); checked by the relay (AGENT_REPLICAS_INVALID). */
    agentReplicas: Type.Optional(Type.Number()),
  },
  closed,
);
export type CreateClusterBody = Static<typeof CreateClusterBody>;

export const RotatePskBody = Type.Object(
  { pskTtl: Type.Optional(DurationText), upstream: Type.Optional(UpstreamText) },
  closed,
);
export type RotatePskBody = Static<typeof RotatePskBody>;

/** The new PSK (shown once) and the commands that use it. */
export const Bootstrap = Type.Object(
  {
    psk: Type.String(),
    expiresAt: Type.String(),
    joinCommand: Type.String(),
    installUrl: Type.String(),
    installCommand: Type.String(),
  },
  closed,
);
export type Bootstrap = Static<typeof Bootstrap>;

export const ClusterWithBootstrap = Type.Object({ cluster: Cluster, bootstrap: Bootstrap }, closed);
export type ClusterWithBootstrap = Static<typeof ClusterWithBootstrap>;
