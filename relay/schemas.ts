/**
 * TypeBox schemas for every request and response. Objects are closed (additionalProperties: false):
 * requests with unknown fields are refused, and responses serialise only the listed fields, so a
 * secret added to a record can never leak through a route that does not name it.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { MAX_CLAIM_KEY, MAX_CLAIM_VALUE, MAX_CLAIMS } from '../shared/claim-limits.js';
import { REASON_CODE_MAX } from './agent-reason.js';

const closed = { additionalProperties: false } as const;
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
/** Who said a path's `reason`: the agent (its lease) or the hub holding its session; null with no reason. */
const ReasonFrom = Nullable(Type.Union([Type.Literal('agent'), Type.Literal('hub')]));

export const LIMITS = {
  nameMax: 63,
  displayNameMax: 128,
  descriptionMax: 256,
  claimsMax: MAX_CLAIMS,
  claimKeyMax: MAX_CLAIM_KEY,
  claimValueMax: MAX_CLAIM_VALUE,
  agentVersionMax: 64,
  durationTextMax: 32,
  reasonCodeMax: REASON_CODE_MAX,
} as const;

export const ErrorBody = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }, closed) },
  closed,
);

export const Condition = Type.Object(
  {
    type: Type.String(),
    status: Type.String(),
    reason: Type.String(),
    message: Type.String(),
    lastTransitionTime: Type.String(),
  },
  closed,
);

/** Claim keys: 1-64 characters, letters/digits with . _ / - inside (TypeBox records ignore key limits, so propertyNames). */
export const Claims = Type.Record(
  Type.String(),
  Type.String({ minLength: 1, maxLength: LIMITS.claimValueMax }),
  {
    maxProperties: LIMITS.claimsMax,
    propertyNames: {
      type: 'string',
      minLength: 1,
      maxLength: LIMITS.claimKeyMax,
      pattern: '^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$',
    },
  },
);

export const Cluster = Type.Object(
  {
    name: Type.String(),
    group: Type.String(),
    displayName: Type.String(),
    status: Type.String(),
    conditions: Type.Array(Condition),
    connected: Type.Boolean(),
    path: Type.String(),
    pathDetail: Nullable(
      Type.Object(
        {
          remote: Nullable(Type.String()),
          rttDirectMs: Nullable(Type.Number()),
          rttRelayedMs: Nullable(Type.Number()),
          lastSwitch: Nullable(Type.String()),
          reason: Nullable(Type.String()),
          reasonFrom: ReasonFrom,
        },
        closed,
      ),
    ),
    agentVersion: Nullable(Type.String()),
    agentOutdated: Type.Boolean(),
    publicKey: Nullable(Type.String()),
    address: Nullable(Type.String()),
    claims: Type.Record(Type.String(), Type.String()),
    leaseRenewTime: Nullable(Type.String()),
    lastHandshake: Nullable(Type.String()),
    rttMs: Nullable(Type.Number()),
    bytesIn: Type.Number(),
    bytesOut: Type.Number(),
    createdAt: Type.String(),
    /** Only on GET /clusters/NAME: whether the agent acts as the caller (impersonation) or as itself there. */
    impersonation: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),
    /** Only on GET /clusters/NAME: the current bootstrap PSK's state (never the PSK), null when it has none. */
    bootstrapPsk: Type.Optional(
      Nullable(
        Type.Object(
          {
            state: Type.Union(['unused', 'used', 'expired', 'revoked'].map((s) => Type.Literal(s))),
            expiresAt: Type.String(),
            usedAt: Nullable(Type.String()),
          },
          closed,
        ),
      ),
    ),
  },
  closed,
);

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

export const Tunnel = Type.Object(
  {
    hubPublicKey: Type.String(),
    presharedKey: Type.String(),
    address: Type.String(),
    hubAddress: Type.String(),
    relayUrl: Type.String(),
    derpUrl: Type.String(),
    udpEndpoint: Nullable(Type.String()),
    stunEndpoint: Nullable(Type.String()),
  },
  closed,
);

export const NameParams = Type.Object({ name: Type.String({ maxLength: 253 }) }, closed);
export const InstallParams = Type.Object({ token: Type.String({ maxLength: 128 }) }, closed);
export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) }, closed);

const DurationText = Type.String({ minLength: 1, maxLength: LIMITS.durationTextMax });

/** The agent's default upstream written into the join command (`--upstream`), http(s)://HOST[:PORT]. */
const UpstreamText = Type.String({ maxLength: 2048 });
export const CreateClusterBody = Type.Object(
  {
    name: Type.String({ maxLength: 253 }),
    group: Type.Optional(Type.String({ maxLength: 253 })),
    displayName: Type.Optional(Type.String({ maxLength: LIMITS.displayNameMax })),
    pskTtl: Type.Optional(DurationText),
    upstream: Type.Optional(UpstreamText),
  },
  closed,
);
export const RotatePskBody = Type.Object(
  { pskTtl: Type.Optional(DurationText), upstream: Type.Optional(UpstreamText) },
  closed,
);
export const ClusterWithBootstrap = Type.Object({ cluster: Cluster, bootstrap: Bootstrap }, closed);
/** A list page's `continue`: present while more items remain (relay/paging.ts). */
const Continue = Type.Optional(Type.String());
/** `?limit=N&continue=TOKEN` of every list route (relay/paging.ts). */
const pageQuery = {
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
  continue: Type.Optional(Type.String({ maxLength: 512 })),
};
export const PageQuery = Type.Object(pageQuery, closed);
export const ClusterListQuery = Type.Object(
  {
    ...pageQuery,
    group: Type.Optional(Type.String({ maxLength: 253 })),
    status: Type.Optional(
      Type.Union([Type.Literal('Pending'), Type.Literal('Accepted'), Type.Literal('Denied')]),
    ),
  },
  closed,
);
export const ClusterList = Type.Object({ items: Type.Array(Cluster), continue: Continue }, closed);

export const KubeconfigBody = Type.Object({ ttl: Type.Optional(DurationText) }, closed);
export const MintedKubeconfig = Type.Object(
  {
    keyId: Type.String(),
    role: Type.String(),
    expiresAt: Type.String(),
    context: Type.String(),
    kubeconfig: Type.Record(Type.String(), Type.Unknown()),
  },
  closed,
);

export const CreateTokenBody = Type.Object(
  {
    role: Type.String({ maxLength: 80 }),
    description: Type.Optional(Type.String({ maxLength: LIMITS.descriptionMax })),
    expiresIn: Type.Optional(DurationText),
  },
  closed,
);
export const CreatedToken = Type.Object(
  { id: Type.String(), role: Type.String(), token: Type.String(), expiresAt: Nullable(Type.String()) },
  closed,
);
export const TokenList = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          role: Type.String(),
          description: Type.String(),
          createdAt: Type.String(),
          expiresAt: Nullable(Type.String()),
          revokedAt: Nullable(Type.String()),
        },
        closed,
      ),
    ),
    continue: Continue,
  },
  closed,
);

export const RegisterBody = Type.Object(
  {
    cluster: Type.String({ maxLength: 253 }),
    publicKey: Type.String({ maxLength: 128 }),
    agentVersion: Type.String({ minLength: 1, maxLength: LIMITS.agentVersionMax }),
    claims: Type.Optional(Claims),
  },
  closed,
);
export const RegisterReply = Type.Object(
  {
    cluster: Type.String(),
    status: Type.String(),
    agentCredential: Type.String(),
    tunnel: Nullable(Tunnel),
  },
  closed,
);
export const AgentReply = Type.Object(
  { cluster: Type.String(), status: Type.String(), tunnel: Nullable(Tunnel), valuesVersion: Type.String() },
  closed,
);
/** The error answers a route declares: every one is the one envelope (docs/API.md). */
export const ERROR_REPLIES = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  429: ErrorBody,
};

/** GET /api/v1/clusters/:name/path-history: path changes, newest first. */
export const PathHistory = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          at: Type.String(),
          path: Type.String(),
          remote: Nullable(Type.String()),
          reason: Nullable(Type.String()),
          reasonFrom: ReasonFrom,
        },
        closed,
      ),
    ),
  },
  closed,
);

export const LeaseBody = Type.Object(
  {
    claims: Type.Optional(Claims),
    agentVersion: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.agentVersionMax })),
    /** Why the agent's traffic is relayed, as the agent sees it; checked by relay/agent-reason.ts. */
    relayedReason: Type.Optional(Nullable(Type.String({ maxLength: LIMITS.reasonCodeMax }))),
  },
  closed,
);
export const LeaseReply = Type.Object(
  {
    leaseDurationSeconds: Type.Number(),
    renewAfterSeconds: Type.Number(),
    valuesVersion: Type.String(),
    /** This relay takes `relayedReason` in the lease body (an older relay refuses the unknown field). */
    takesRelayedReason: Type.Boolean(),
  },
  closed,
);

/** Values are free-form JSON objects (bounded by the 64 KiB body limit). */
export const ValuesObject = Type.Record(Type.String(), Type.Unknown());

export const AuditQuery = Type.Object(
  {
    ...pageQuery,
    /** RFC 3339 time: only rows written at or after it. */
    since: Type.Optional(Type.String({ maxLength: 64 })),
    /** Only rows of this actor (a key id, `agent:NAME`, `bootstrap:KEY`, ...). */
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    /** Only rows about this cluster (their target). */
    cluster: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    /** Only session rows of this kind (action `session.<kind>`). */
    kind: Type.Optional(Type.Union(['exec', 'attach', 'port-forward'].map((k) => Type.Literal(k)))),
  },
  closed,
);
export const AuditList = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          id: Type.Number(),
          at: Type.String(),
          actor: Type.String(),
          action: Type.String(),
          target: Type.String(),
          source: Type.String(),
          detail: Type.Record(Type.String(), Type.Unknown()),
        },
        closed,
      ),
    ),
    continue: Continue,
  },
  closed,
);

export const ValuesQuery = Type.Object(
  {
    token: Type.Optional(Type.String({ maxLength: 128 })),
    source: Type.Optional(Type.Union([Type.Literal('platform-config'), Type.Literal('cluster-annotation')])),
  },
  closed,
);

export const Unjoined = Type.Object({ unjoined: Type.String() }, closed);
export const Deleted = Type.Object({ deleted: Type.String() }, closed);
export const Revoked = Type.Object({ revoked: Type.String() }, closed);

export const WhoAmI = Type.Object(
  {
    keyId: Type.String(),
    role: Type.String(),
    group: Nullable(Type.String()),
    expiresAt: Nullable(Type.String()),
  },
  closed,
);
