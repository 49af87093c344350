/**
 * The relay's own route schemas: path parameters, query strings, the values object and the error answers every
 * route declares. The bodies the agent and the console exchange with the relay are in shared/api/.
 */
import { Type } from '@sinclair/typebox';
import { ClusterStatus } from '../../../shared/api/cluster-status.js';
import { ErrorBody } from '../../../shared/api/error-body.js';
import { closed } from '../../../shared/api/schema-parts.js';

export const NameParams = Type.Object({ name: Type.String({ maxLength: 253 }) }, closed);
export const InstallParams = Type.Object({ token: Type.String({ maxLength: 128 }) }, closed);
export const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) }, closed);

/** `?limit=N&continue=TOKEN` of every list route (relay/control/model/paging.ts). */
const pageQuery = {
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$' })),
  continue: Type.Optional(Type.String({ maxLength: 512 })),
};
export const PageQuery = Type.Object(pageQuery, closed);
export const ClusterListQuery = Type.Object(
  {
    ...pageQuery,
    group: Type.Optional(Type.String({ maxLength: 253 })),
    status: Type.Optional(ClusterStatus),
  },
  closed,
);

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

export const ValuesQuery = Type.Object(
  {
    token: Type.Optional(Type.String({ maxLength: 128 })),
    source: Type.Optional(Type.Union([Type.Literal('platform-config'), Type.Literal('cluster-annotation')])),
  },
  closed,
);

/** Values are free-form JSON objects (bounded by the 64 KiB body limit). */
export const ValuesObject = Type.Record(Type.String(), Type.Unknown());

/** The error answers a route declares: every one is the one envelope (docs/API.md). */
export const ERROR_REPLIES = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
  429: ErrorBody,
};
