/** GET /api/v1/whoami: the calling access key's id, role, group scope and expiry. */
import { type Static, Type } from '@sinclair/typebox';
import { closed, Nullable } from './schema-parts.js';

export const WhoAmI = Type.Object(
  {
    keyId: Type.String(),
    role: Type.String(),
    group: Nullable(Type.String()),
    expiresAt: Nullable(Type.String()),
  },
  closed,
);
export type WhoAmI = Static<typeof WhoAmI>;
