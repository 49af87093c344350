/**
 * Node HTTP server options that carry the relay's limits, and the request checks Node would otherwise answer
 * itself without the error envelope (a missing Host header, a request that arrives while the relay closes).
 */
import type { FastifyInstance } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import { type HttpLimits, headerCheckIntervalMs } from '../config/http-limits.js';

export interface NodeServerLimits {
  headersTimeout: number;
  /** 0: the body timeout is the connection guard's (Node's would cut path-proxy streams too). */
  requestTimeout: number;
  connectionsCheckingInterval: number;
  keepAliveTimeout: number;
  /** false: the Host check below answers with the error envelope (Node answers an empty 400). */
  requireHostHeader: boolean;
}

export function nodeServerLimits(limits: HttpLimits): NodeServerLimits {
  return {
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: 0,
    connectionsCheckingInterval: headerCheckIntervalMs(limits.headerTimeoutMs),
    keepAliveTimeout: limits.idleTimeoutMs,
    requireHostHeader: false,
  };
}

/**
 * Root onRequest hook: 503 CLOSED once the relay is closing (in place of Fastify's own 503 body), 400 BAD_INPUT
 * for an HTTP/1.1 request without a Host header (RFC 9112 3.2).
 */
export function addRequestChecks(app: FastifyInstance, isClosing: () => boolean): void {
  app.addHook('onRequest', async (req) => {
    if (isClosing()) throw new TunnelError('CLOSED', 'the relay is shutting down');
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) {
      throw new TunnelError('BAD_INPUT', 'an HTTP/1.1 request needs a Host header');
    }
  });
}
