/**
 * The relay's pino logger. Secrets never reach a log line: credential headers and secret-bearing
 * fields are censored by path, secret-bearing query parameters are cut out of logged URLs (redact-url.ts),
 * and the serializers (log-serializers.ts, total over any value) log only named fields: a request's
 * method, redacted URL and remote address; an error's type, code, status, redacted message and stack.
 */
import type { DestinationStream, Logger } from 'pino';
import { pino, stdTimeFunctions } from 'pino';
import type { LogLevel } from './config/config.js';
import { serializeErr, serializeReq } from './log-serializers.js';

export { redactUrl } from './redact-url.js';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["proxy-authorization"]',
  '*.psk',
  '*.token',
  '*.agentCredential',
  '*.presharedKey',
  '*.privateKey',
  '*.adminKey',
  '*.accessKey',
  'psk',
  'token',
  'agentCredential',
  'presharedKey',
  'privateKey',
  'adminKey',
  'accessKey',
];

export function createLogger(level: LogLevel, stream?: DestinationStream): Logger {
  return pino(
    {
      level,
      // ISO 8601 in UTC, as the agent's lines (tunnel-client/cli/context.ts stderrLog).
      timestamp: stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: { req: serializeReq, err: serializeErr },
    },
    stream,
  );
}
