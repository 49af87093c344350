/**
 * `--metrics-listen HOST:PORT`: a plain-HTTP port that serves GET /metrics alone (a scraper on a private network or
 * the pod's own address), so that /metrics need not be open on the public port. Bound with the other ports before
 * anything is written (start/ports.ts); it answers 503 until the relay hands it the exposition (`serve`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TunnelError } from '../../../shared/errors.js';
import { bindHint } from '../port-hold.js';

export interface Exposition {
  contentType: string;
  body: string;
}

/** The BAD_CONFIG for `--metrics-listen` that cannot be bound. */
export function metricsBindError(host: string, port: number, code: string): TunnelError {
  return new TunnelError(
    'BAD_CONFIG',
    `metrics-listen: cannot bind ${host}:${port} (${code})${bindHint(code, '--metrics-listen')}`,
  );
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

export class MetricsPort {
  readonly #server: Server;
  #render: (() => Promise<Exposition>) | null = null;

  private constructor(server: Server) {
    this.#server = server;
    server.on('request', (req, res) => void this.#answer(req, res));
  }

  static open(host: string, port: number): Promise<MetricsPort> {
    const server = createServer({ requestTimeout: 15_000, headersTimeout: 10_000 });
    server.on('clientError', (_err, socket) => socket.destroy());
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(metricsBindError(host, port, err.code ?? 'error')),
      );
      server.listen({ host, port, exclusive: true }, () => resolve(new MetricsPort(server)));
    });
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** From now on GET /metrics answers `render`'s exposition. */
  serve(render: () => Promise<Exposition>): void {
    this.#render = render;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }

  async #answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics') return text(res, 404, 'only /metrics is served on this port\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'GET /metrics\n');
    if (this.#render === null) return text(res, 503, 'the relay is starting\n');
    try {
      const e = await this.#render();
      res.writeHead(200, { 'content-type': e.contentType, 'content-length': Buffer.byteLength(e.body) });
      res.end(req.method === 'HEAD' ? undefined : e.body);
    } catch {
      text(res, 500, 'the metrics could not be read\n');
    }
  }
}
