/**
 * GET /api/v1/agent (with the agent credential): the registration's status and, once Accepted, the tunnel; and
 * DELETE /api/v1/agent's answer.
 */
import { type Static, Type } from '@sinclair/typebox';
import { ClusterStatus } from './cluster-status.js';
import { closed, Nullable } from './schema-parts.js';
import { Tunnel } from './tunnel.js';

export const AgentInfo = Type.Object(
  {
    cluster: Type.String(),
    status: ClusterStatus,
    tunnel: Nullable(Tunnel),
    /** The cluster's values version (absent from relays that do not send it). */
    valuesVersion: Type.Optional(Type.String()),
  },
  closed,
);
export type AgentInfo = Static<typeof AgentInfo>;

export const Unjoined = Type.Object({ unjoined: Type.String() }, closed);
export type Unjoined = Static<typeof Unjoined>;
