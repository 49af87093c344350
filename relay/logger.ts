/**
 * The relay's pino logger. Secrets never reach a log line: credential headers and secret-bearing
 * fields are censored by path, the `token` query parameter is cut out of logged URLs, and the
 * request serializer logs only method, redacted URL, and remote address.
 */
import type { DestinationStream, Logger } from 'pino';
import { pino } from 'pino';
import type { LogLevel } from './config.js';
import { redactSecrets } from './secrets.js';

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

/** Replaces the value of every `token` query parameter (any case) with REDACTED. */
export function redactUrl(url: string): string {
  return redactSecrets(url.replace(/([?&](?:token|access_token|psk)=)[^&#]*/gi, '$1REDACTED'));
}

export interface SerializedRequest {
  method: string;
  url: string;
  remoteAddress: string | undefined;
}

export function createLogger(level: LogLevel, stream?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: {
        req(req: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) {
          return {
            method: req.method ?? '',
            url: redactUrl(req.url ?? ''),
            remoteAddress: req.ip ?? req.socket?.remoteAddress,
          } satisfies SerializedRequest;
        },
        err(err: Error & { code?: string; statusCode?: number }) {
          return {
            type: err.name,
            code: err.code,
            statusCode: err.statusCode,
            message: redactSecrets(err.message),
            stack: err.stack ? redactSecrets(err.stack) : undefined,
          };
        },
      },
    },
    stream,
  );
}
