/**
 * Ports first: `serve` binds every port it needs (the TLS/HTTP listen port, `--udp-port`, `--stun-port`) before it
 * writes anything to the data dir or issues anything (certificate, hub key, admin key), so a taken port fails the start
 * with the data dir as it was. The UDP ports are bound for good; the TCP listen port is held by a plain socket server
 * until Fastify takes it over (the gap between the two is one event-loop turn); connections made to it meanwhile are
 * closed at once.
 */
import { createServer } from 'node:net';
import { TunnelError } from '../../shared/errors.js';

/** What to do about a bind error code, appended to the BAD_CONFIG message. */
export function bindHint(code: string, flag: string): string {
  if (code === 'EADDRINUSE')
    return `: another process holds this port; stop it or choose another with ${flag}`;
  if (code === 'EACCES')
    return `: ports below 1024 need root or CAP_NET_BIND_SERVICE; choose another with ${flag}`;
  if (code === 'EADDRNOTAVAIL')
    return `: no interface of this machine has that address; fix the host in ${flag}`;
  return '';
}

/** The BAD_CONFIG for `--listen` that cannot be bound. */
export function listenBindError(host: string, port: number, code: string): TunnelError {
  return new TunnelError(
    'BAD_CONFIG',
    `listen: cannot bind ${host}:${port} (${code})${bindHint(code, '--listen')}`,
  );
}

export interface HeldPort {
  /** Lets the port go so the real server can bind it; safe to call more than once. */
  release(): Promise<void>;
}

/** Binds `host:port` on TCP and holds it; BAD_CONFIG naming `--listen` when it cannot. Port 0 holds nothing. */
export function holdListenPort(host: string, port: number): Promise<HeldPort> {
  if (port === 0) return Promise.resolve({ release: () => Promise.resolve() });
  // A connection that arrives while the port is held (a load balancer's health check) is closed at once: its
  // client retries, and a reset from it must not reach an 'error' event nobody listens to.
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(listenBindError(host, port, err.code ?? 'error'));
    });
    server.listen({ host, port, exclusive: true }, () => {
      let released: Promise<void> | null = null;
      resolve({
        release() {
          released ??= new Promise<void>((r) => server.close(() => r()));
          return released;
        },
      });
    });
  });
}
