/**
 * The building blocks every API body uses. Objects are closed (additionalProperties: false): the relay refuses a
 * request with an unknown field, and serialises only the listed fields of an answer, so a secret added to a record
 * can never leak through a route that does not name it.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { BODY_LIMITS } from './body-limits.js';

export const closed = { additionalProperties: false } as const;

/** The value, or null. */
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** A list page's `continue`: present while more items remain (relay/control/model/paging.ts). */
export const Continue = Type.Optional(Type.String());

/** A duration as text (`90s`, `24h`, `7d`), as the relay's duration parser takes it. */
export const DurationText = Type.String({ minLength: 1, maxLength: BODY_LIMITS.durationTextMax });
