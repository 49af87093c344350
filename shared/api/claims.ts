/**
 * The key/value claims an agent reports at registration and in its lease. Keys: 1-64 characters, letters and
 * digits with . _ / - inside (TypeBox records ignore key limits, so propertyNames holds them).
 */
import { type Static, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';

export const Claims = Type.Record(
  Type.String(),
  Type.String({ minLength: 1, maxLength: BODY_LIMITS.claimValueMax }),
  {
    maxProperties: BODY_LIMITS.claimsMax,
    propertyNames: {
      type: 'string',
      minLength: 1,
      maxLength: BODY_LIMITS.claimKeyMax,
      pattern: '^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$',
    },
  },
);
export type Claims = Static<typeof Claims>;
