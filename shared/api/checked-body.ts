/**
 * An answer's body checked against its schema before a client acts on it. Fields the schema does not name (a newer
 * relay's) are dropped, so the client only ever holds what it knows; a body that does not match is RELAY_BAD_RESPONSE
 * naming the call and the field (`/tunnel/address: Expected string`), never the value, which may be a secret.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { Value, type ValueError } from '@sinclair/typebox/value';
import { TunnelError } from '../errors.js';

/** Each schema with its objects open to unknown fields (Value.Clean then drops them), made once. */
const openSchemas = new WeakMap<TSchema, TSchema>();

function openObjects(node: unknown): void {
  if (typeof node !== 'object' || node === null) return;
  if ('additionalProperties' in node && node.additionalProperties === false) {
    Reflect.deleteProperty(node, 'additionalProperties');
  }
  for (const child of Object.values(node)) openObjects(child);
}

function openSchema(schema: TSchema): TSchema {
  let open = openSchemas.get(schema);
  if (open === undefined) {
    open = Value.Clone(schema);
    openObjects(open);
    openSchemas.set(schema, open);
  }
  return open;
}

/** The error that says most: inside a union (a nullable object), the one of the variant that got furthest. */
function deepest(error: ValueError): ValueError {
  let best = error;
  for (const variant of error.errors) {
    const first = variant.First();
    if (first === undefined) continue;
    const inner = deepest(first);
    if (inner.path.length > best.path.length) best = inner;
  }
  return best;
}

/** Where the body breaks its schema: `/path: what was expected` (no value). */
export function bodyMismatch(schema: TSchema, body: unknown): string | null {
  const first = Value.Errors(openSchema(schema), body).First();
  if (first === undefined) return null;
  const error = deepest(first);
  return `${error.path === '' ? 'the body' : error.path}: ${error.message}`;
}

/**
 * The body as the schema describes it (unknown fields dropped); throws RELAY_BAD_RESPONSE when it does not match.
 * `call` names the request (`POST /api/v1/register`). The body is changed in place.
 */
export function checkedBody<T extends TSchema>(schema: T, body: unknown, call: string): Static<T> {
  const open = openSchema(schema);
  if (Value.Check(open, body)) {
    const cleaned = Value.Clean(open, body);
    if (Value.Check(schema, cleaned)) return cleaned;
  }
  throw new TunnelError(
    'RELAY_BAD_RESPONSE',
    `relay answered ${call} with a body this client does not accept (${bodyMismatch(schema, body) ?? 'unknown fields'})`,
  );
}
