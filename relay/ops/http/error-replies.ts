/**
 * Error answers for what never reaches a route: Node's HTTP parser errors and request-head timeouts
 * ('clientError'), Fastify's router errors (a path that is not valid percent-encoding) and unsupported
 * `Expect` headers. Each is the API's one envelope `{"error":{"code","message"}}` with the status of its code.
 */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import { clientErrorAnswer } from '../http-client-error.js';
import { redactUrl } from '../logger.js';
import type { CutReason } from './cut-log.js';

/** After the answer is written, a client that does not close is cut after this. */
export const CLOSE_AFTER_REPLY_MS = 1_000;

/**
 * What a client error answers (relay/ops/http-client-error.ts maps the parser's codes; the head timeout names the
 * configured value) and how the cut is counted; null: nothing to answer (the peer reset or went away).
 */
export function clientErrorReply(
  err: { code?: string | undefined; reason?: string | undefined },
  headerTimeoutMs: number,
): { error: TunnelError; reason: CutReason } | null {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    const s = headerTimeoutMs / 1000;
    return {
      error: new TunnelError('REQUEST_TIMEOUT', `request line and headers not received within ${s} s`),
      reason: 'header_timeout',
    };
  }
  if (!err.code?.startsWith('HPE_')) return null;
  return { error: clientErrorAnswer(err.code, err.reason).error, reason: 'malformed' };
}

/** The answer to a Fastify framework error (bad URL, over-long path parameter). */
export function frameworkErrorReply(code: string | undefined, url: string): TunnelError {
  const path = redactUrl(url).split('?')[0];
  if (code === 'FST_ERR_BAD_URL') {
    return new TunnelError('BAD_INPUT', `path ${JSON.stringify(path)} is not valid percent-encoding`);
  }
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return new TunnelError('BAD_INPUT', `a segment of path ${JSON.stringify(path)} is over 100 characters`);
  }
  return new TunnelError('INTERNAL', 'internal error');
}

/** The server's 'checkExpectation' handler: an `Expect` other than 100-continue (Node answers 417 with no body). */
export function answerExpectation(req: IncomingMessage, res: ServerResponse): void {
  const shown = JSON.stringify((req.headers.expect ?? '').slice(0, 64));
  const e = new TunnelError('EXPECTATION_FAILED', `Expect: ${shown} is not supported (only 100-continue)`);
  const body = JSON.stringify(e.toJSON());
  res.writeHead(e.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

/** The bytes of a complete HTTP/1.1 error answer that closes the connection. */
export function rawErrorResponse(err: TunnelError): string {
  const body = JSON.stringify(err.toJSON());
  return (
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/**
 * Writes the answer straight onto the socket and closes it once the answer is flushed (or after
 * CLOSE_AFTER_REPLY_MS when the peer does not read it).
 */
export function replyAndClose(socket: Duplex, err: TunnelError, clock: Clock): void {
  if (socket.destroyed) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const timer = clock.setTimer(CLOSE_AFTER_REPLY_MS, () => socket.destroy());
  socket.once('close', () => clock.clearTimer(timer));
  socket.end(rawErrorResponse(err), () => socket.destroy());
}
