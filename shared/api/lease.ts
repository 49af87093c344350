/** POST /api/v1/agent/lease: the agent renews its lease (and reports claims, version, relayed reason). */
import { type Static, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';
import { Claims } from './claims.js';
import { closed, Nullable } from './schema-parts.js';

export const LeaseBody = Type.Object(
  {
    claims: Type.Optional(Claims),
    agentVersion: Type.Optional(Type.String({ minLength: 1, maxLength: BODY_LIMITS.agentVersionMax })),
    /** Why the agent's traffic is relayed, as the agent sees it; checked by relay/control/model/agent-reason.ts. */
    relayedReason: Type.Optional(Nullable(Type.String({ maxLength: BODY_LIMITS.reasonCodeMax }))),
  },
  closed,
);
export type LeaseBody = Static<typeof LeaseBody>;

export const LeaseReply = Type.Object(
  {
    leaseDurationSeconds: Type.Number(),
    renewAfterSeconds: Type.Number(),
    /** Changes whenever the cluster's effective values do: the agent refetches them. */
    valuesVersion: Type.String(),
    /** This relay takes `relayedReason` in the lease body; absent from relays that refuse the field. */
    takesRelayedReason: Type.Optional(Type.Boolean()),
  },
  closed,
);
export type LeaseReply = Static<typeof LeaseReply>;
