/** The one error envelope every route answers a refusal with (docs/API.md): a stable code and a message. */
import { type Static, Type } from '@sinclair/typebox';
import { closed } from './schema-parts.js';

export const ErrorBody = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }, closed) },
  closed,
);
export type ErrorBody = Static<typeof ErrorBody>;
