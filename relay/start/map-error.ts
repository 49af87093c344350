/** Maps Fastify's own errors (validation, body limit, media type) to the project's codes. */
import type { FastifyError } from 'fastify';
import { type ErrorCode, isTunnelError, TunnelError } from '../../shared/errors.js';
import { redactSecrets } from '../ops/secrets.js';
import { BODY_LIMIT } from './limits.js';

function validationError(err: FastifyError): TunnelError {
  const v = err.validation![0]!;
  const where = `${err.validationContext ?? 'body'}${v.instancePath ? v.instancePath.replace(/\//g, '.') : ''}`;
  const params = v.params as Record<string, unknown>;
  if (typeof params.additionalProperty === 'string') {
    return new TunnelError('BAD_INPUT', `${where}.${params.additionalProperty}: unknown field`);
  }
  if (typeof params.missingProperty === 'string') {
    return new TunnelError('BAD_INPUT', `${where}.${params.missingProperty}: required`);
  }
  const allowed = allowedValues(err, v);
  if (allowed !== null) return new TunnelError('BAD_INPUT', `${where}: must be one of ${allowed.join(', ')}`);
  return new TunnelError('BAD_INPUT', `${where}: ${v.message ?? 'invalid'}`);
}

/** The values a field takes when its schema is a choice of constants (an enum, or TypeBox's union of literals). */
function allowedValues(
  err: FastifyError,
  first: NonNullable<FastifyError['validation']>[number],
): string[] | null {
  const params = first.params as Record<string, unknown>;
  if (Array.isArray(params.allowedValues)) return params.allowedValues.map(String);
  const here = err.validation!.filter((e) => e.instancePath === first.instancePath);
  if (!here.some((e) => e.keyword === 'anyOf')) return null;
  const constants = here.filter((e) => e.keyword === 'const');
  if (constants.length === 0 || constants.length !== here.length - 1) return null;
  return constants.map((e) => String((e.params as { allowedValue?: unknown }).allowedValue));
}

export function mapError(err: FastifyError): TunnelError {
  if (isTunnelError(err)) return err;
  if (err.validation && err.validation.length > 0) return validationError(err);
  const byCode: Record<string, [ErrorCode, string]> = {
    FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', `request body is over the ${BODY_LIMIT}-byte limit`],
    FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json'],
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_INPUT', 'Content-Length does not match the body'],
  };
  const mapped = err.code ? byCode[err.code] : undefined;
  if (mapped) return new TunnelError(mapped[0], mapped[1]);
  if (err.statusCode === 413)
    return new TunnelError('PAYLOAD_TOO_LARGE', `request body is over the ${BODY_LIMIT}-byte limit`);
  if (err.statusCode === 415)
    return new TunnelError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
    return new TunnelError('BAD_INPUT', `body: ${redactSecrets(err.message)}`);
  }
  return new TunnelError('INTERNAL', 'internal error');
}
