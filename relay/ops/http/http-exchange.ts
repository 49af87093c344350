/**
 * One HTTP request forwarded over a transport the caller opened (a stream to an agent, or a TLS connection to
 * another replica) and its answer piped back to the client: the body follows the request as its framing says,
 * the answer's status and headers are written once, and whichever side goes away first takes the transport
 * with it, so neither a client that leaves nor an upstream that stops leaves the other half open.
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TunnelError } from '../../../shared/errors.js';

export interface RequestHead {
  method: string;
  path: string;
  /** A header object, or a flat name/value list sent in its order and case. */
  headers: OutgoingHttpHeaders | readonly string[];
}

export interface ExchangeOptions {
  /** The client's request and the response to it. */
  req: IncomingMessage;
  res: ServerResponse;
  /** The forwarded request's head, written on `transport` as it is (no Host header is added). */
  head: RequestHead;
  /** Destroyed when either side goes away before the exchange is complete. */
  transport: Duplex;
  /** False when the request has no body (framing 'none'): the forwarded request ends at once. */
  bodyFollows: boolean;
  /** The answer's headers as they go to the client. */
  answerHeaders(rawHeaders: string[]): OutgoingHttpHeaders | string[];
  /** Names what failed in the STREAM_RESET error ('upstream request', 'mesh request'). */
  what: string;
  /** Called with the answer's status before it is written. */
  onAnswer?(status: number): void;
}

/** Resolves when the answer has been piped (or either side left); rejects when the request itself failed. */
export function exchange(opts: ExchangeOptions): Promise<void> {
  const { req, res, transport } = opts;
  const upstream = http.request({
    method: opts.head.method,
    path: opts.head.path,
    headers: opts.head.headers,
    setHost: false,
    createConnection: () => transport,
  });
  return new Promise<void>((resolve, reject) => {
    upstream.on('error', (err) =>
      reject(new TunnelError('STREAM_RESET', `${opts.what} failed: ${err.message}`)),
    );
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 502;
      opts.onAnswer?.(status);
      res.writeHead(status, answer.statusMessage, opts.answerHeaders(answer.rawHeaders));
      answer.pipe(res);
      answer.on('error', (e) => res.destroy(e));
      answer.on('end', () => resolve());
      answer.on('aborted', () => res.destroy());
      res.on('close', () => {
        if (!answer.complete) transport.destroy();
        resolve();
      });
    });
    if (opts.bodyFollows) req.pipe(upstream);
    else upstream.end();
    req.on('aborted', () => transport.destroy());
    res.on('close', () => {
      if (!res.writableFinished) transport.destroy();
    });
  });
}
