/** GET /api/v1/clusters/NAME/path-history: the cluster's path changes, newest first. */
import { type Static, Type } from '@sinclair/typebox';
import { ReasonFrom } from './path-detail.js';
import { closed, Nullable } from './schema-parts.js';

export const PathChange = Type.Object(
  {
    at: Type.String(),
    path: Type.String(),
    remote: Nullable(Type.String()),
    reason: Nullable(Type.String()),
    reasonFrom: ReasonFrom,
  },
  closed,
);
export type PathChange = Static<typeof PathChange>;

export const PathHistory = Type.Object({ items: Type.Array(PathChange) }, closed);
export type PathHistory = Static<typeof PathHistory>;
