/**
 * The logger's `req` and `err` serializers. Both are total: given any value (an Error, a string,
 * undefined, null, a plain or circular object, an object whose getters throw) they return a small
 * plain object and never throw, so a log call can never fail the code that makes it. They copy only
 * named fields, never the whole value, and pass every string through redaction.
 */
import { redactUrl } from './redact-url.js';
import { redactSecrets } from './secrets.js';

export interface SerializedRequest {
  method: string;
  url: string;
  remoteAddress: string | undefined;
}

export interface SerializedError {
  type: string;
  code?: string | number;
  statusCode?: number;
  message: string;
  stack?: string;
}

/** Longest string a serializer copies from a value (longer ones are cut, then redacted). */
export const MAX_FIELD_CHARS = 4096;

/** `value[key]` when `value` is an object, or undefined; a throwing getter or proxy trap reads as undefined. */
function read(value: unknown, key: string): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return undefined;
  try {
    return Reflect.get(value, key);
  } catch {
    return undefined;
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value.slice(0, MAX_FIELD_CHARS) : undefined;
}

export function serializeReq(req: unknown): SerializedRequest {
  const socket = read(req, 'socket');
  return {
    method: text(read(req, 'method')) ?? '',
    url: redactUrl(text(read(req, 'url')) ?? ''),
    // clientAddress: a hub replica's own (relay/start/client-address.ts), the client a mesh forwarder names.
    remoteAddress:
      text(read(req, 'clientAddress')) ?? text(read(req, 'ip')) ?? text(read(socket, 'remoteAddress')),
  };
}

/** What an arbitrary thrown value is called in a log line. */
function typeOf(err: unknown): string {
  if (err === null) return 'null';
  if (typeof err !== 'object' && typeof err !== 'function') return typeof err;
  return redactSecrets(text(read(err, 'name')) ?? 'Object');
}

/** The message of a thrown value: its `message` field, or the value itself when it is a primitive. */
function messageOf(err: unknown): string {
  const m = text(read(err, 'message'));
  if (m !== undefined) return m;
  if (typeof err === 'string') return err.slice(0, MAX_FIELD_CHARS);
  if (typeof err === 'number' || typeof err === 'boolean' || typeof err === 'bigint') return String(err);
  return '';
}

function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

export function serializeErr(err: unknown): SerializedError {
  const code = read(err, 'code');
  const statusCode = read(err, 'statusCode');
  const stack = text(read(err, 'stack'));
  return {
    type: typeOf(err),
    code: typeof code === 'string' ? redactSecrets(code.slice(0, MAX_FIELD_CHARS)) : numberOrUndefined(code),
    statusCode: numberOrUndefined(statusCode),
    message: redactSecrets(messageOf(err)),
    stack: stack === undefined ? undefined : redactSecrets(stack),
  };
}
