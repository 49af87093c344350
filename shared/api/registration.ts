/**
 * POST /api/v1/register: the agent's public key, version and claims, sent with a cluster PSK or a bootstrap access
 * key; the relay answers the registration's status, the agent credential (a secret, shown once) and, once the
 * cluster is Accepted, the tunnel.
 */
import { type Static, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';
import { Claims } from './claims.js';
import { ClusterStatus } from './cluster-status.js';
import { closed, Nullable } from './schema-parts.js';
import { Tunnel } from './tunnel.js';

export const RegisterBody = Type.Object(
  {
    cluster: Type.String({ maxLength: 253 }),
    publicKey: Type.String({ maxLength: 128 }),
    agentVersion: Type.String({ minLength: 1, maxLength: BODY_LIMITS.agentVersionMax }),
    claims: Type.Optional(Claims),
  },
  closed,
);
export type RegisterBody = Static<typeof RegisterBody>;

export const RegisterReply = Type.Object(
  {
    cluster: Type.String(),
    status: ClusterStatus,
    agentCredential: Type.String(),
    tunnel: Nullable(Tunnel),
  },
  closed,
);
export type RegisterReply = Static<typeof RegisterReply>;
