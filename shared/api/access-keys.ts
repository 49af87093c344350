/** /api/v1/tokens: access keys as an administrator creates, lists and revokes them (the key is shown once). */
import { type Static, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';
import { Continue, closed, DurationText, Nullable } from './schema-parts.js';

export const CreateTokenBody = Type.Object(
  {
    role: Type.String({ maxLength: 80 }),
    description: Type.Optional(Type.String({ maxLength: BODY_LIMITS.descriptionMax })),
    expiresIn: Type.Optional(DurationText),
  },
  closed,
);
export type CreateTokenBody = Static<typeof CreateTokenBody>;

export const CreatedToken = Type.Object(
  { id: Type.String(), role: Type.String(), token: Type.String(), expiresAt: Nullable(Type.String()) },
  closed,
);
export type CreatedToken = Static<typeof CreatedToken>;

/** One access key as a list shows it (never the key). */
export const AccessKey = Type.Object(
  {
    id: Type.String(),
    role: Type.String(),
    description: Type.String(),
    createdAt: Type.String(),
    expiresAt: Nullable(Type.String()),
    revokedAt: Nullable(Type.String()),
  },
  closed,
);
export type AccessKey = Static<typeof AccessKey>;

export const TokenList = Type.Object({ items: Type.Array(AccessKey), continue: Continue }, closed);
export type TokenList = Static<typeof TokenList>;

export const Revoked = Type.Object({ revoked: Type.String() }, closed);
export type Revoked = Static<typeof Revoked>;
