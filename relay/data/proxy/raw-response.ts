/** Error answers written straight onto a socket (CONNECT and Upgrade requests bypass Fastify). */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ErrorCode, isTunnelError, TunnelError } from '../../../shared/errors.js';

/** HTTP status of an error at the proxies: the code's own status, except where the proxy contract differs. */
export function proxyStatus(err: TunnelError, connect: boolean): number {
  const byCode: Partial<Record<ErrorCode, number>> = {
    UNAUTHENTICATED: connect ? 407 : 401,
    STREAM_REFUSED: 502,
    STREAM_RESET: 502,
    STREAM_LIMIT: 503,
    LIMIT_EXCEEDED: 503,
    CLOSED: 503,
    WIRE_MALFORMED: 502,
    WIRE_BAD_TYPE: 502,
    WIRE_TRUNCATED: 502,
  };
  return byCode[err.code] ?? err.status;
}

export function asTunnelError(err: unknown): TunnelError {
  return isTunnelError(err) ? err : new TunnelError('INTERNAL', 'internal error');
}

/**
 * Writes a complete HTTP/1.1 error response and ends the socket. The body is the JSON error envelope,
 * or `opts.body` (the path proxy answers a Kubernetes Status).
 */
export function writeErrorResponse(
  socket: Duplex,
  status: number,
  err: TunnelError,
  opts: { body?: unknown } = {},
): void {
  if (socket.destroyed || !socket.writable) return;
  const body = JSON.stringify(opts.body ?? err.toJSON());
  const extra =
    status === 407 ? 'proxy-authenticate: Bearer realm="tunnel-relay", Basic realm="tunnel-relay"\r\n' : '';
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      extra +
      'connection: close\r\n\r\n' +
      body,
  );
}
