/**
 * Attack clients that hold the relay's connections without finishing a request, from a chosen local address
 * (Linux routes 127.0.0.0/8 to lo, so 127.0.0.2, 127.0.0.3, ... are distinct sources to the relay):
 *   - `head`: TLS, then a request line and headers trickled one header every 200 ms, never finished;
 *   - `body`: TLS, a complete unauthenticated `PUT` head announcing 1,000 bytes, then one byte every 200 ms;
 *   - `silent`: TLS, then nothing at all;
 *   - `idle`: TLS, one complete `GET /healthz`, then nothing (a keep-alive connection).
 * Each records whether its TLS handshake finished, everything the relay sent, and when the relay closed it.
 */
import net from 'node:net';
import tls from 'node:tls';

export type SlowKind = 'head' | 'body' | 'silent' | 'idle';

export interface SlowClient {
  readonly kind: SlowKind;
  readonly from: string;
  /** Resolves true once TLS is up, false if the connection ended first (refused at accept). */
  readonly secured: Promise<boolean>;
  /** Resolves when the connection is closed, with the milliseconds since TLS was up (or since the start). */
  readonly closed: Promise<number>;
  readonly isClosed: () => boolean;
  /** What the relay sent. */
  readonly received: () => string;
  /** Resolves once the relay has sent something (or the connection closed). */
  readonly answered: Promise<void>;
  destroy(): void;
}

const TRICKLE_MS = 200;

export function openSlow(kind: SlowKind, opts: { port: number; from: string }): SlowClient {
  const start = Date.now();
  let upAt = start;
  let text = '';
  let closed = false;
  let trickle: NodeJS.Timeout | undefined;
  const tcp = net.connect({ host: '127.0.0.1', port: opts.port, localAddress: opts.from });
  tcp.on('error', () => {});
  const socket = tls.connect({ socket: tcp, rejectUnauthorized: false });
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    text += d;
  });
  socket.on('error', () => {});
  const answered = new Promise<void>((resolve) => {
    socket.once('data', () => resolve());
    socket.once('close', () => resolve());
  });
  const secured = new Promise<boolean>((resolve) => {
    socket.once('secureConnect', () => resolve(true));
    socket.once('close', () => resolve(false));
  });
  const closedAt = new Promise<number>((resolve) =>
    socket.once('close', () => {
      closed = true;
      clearInterval(trickle);
      resolve(Date.now() - upAt);
    }),
  );
  socket.once('secureConnect', () => {
    upAt = Date.now();
    if (kind === 'head') {
      socket.write('GET /healthz HTTP/1.1\r\nHost: relay\r\n');
      let i = 0;
      trickle = setInterval(() => socket.write(`x-slow-${i++}: 1\r\n`), TRICKLE_MS);
    } else if (kind === 'body') {
      socket.write(
        'PUT /api/v1/values HTTP/1.1\r\nHost: relay\r\ncontent-type: application/json\r\n' +
          'content-length: 1000\r\n\r\n{',
      );
      trickle = setInterval(() => socket.write(' '), TRICKLE_MS);
    } else if (kind === 'idle') {
      socket.write('GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n');
    }
  });
  return {
    kind,
    from: opts.from,
    secured,
    closed: closedAt,
    isClosed: () => closed,
    received: () => text,
    answered,
    destroy: () => socket.destroy(),
  };
}
