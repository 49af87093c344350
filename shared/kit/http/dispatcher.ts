/**
 * The undici dispatcher every relay HTTPS call goes through. Trust is one of three kinds:
 *   - pin:    the relay's leaf certificate (DER) must hash to the pin; chain and hostname are not checked,
 *             so a self-signed certificate is accepted exactly when it matches the pin, never otherwise;
 *   - ca:     ordinary verification against the given CA certificates (`--ca-file`);
 *   - system: ordinary verification against Node's bundled roots.
 *
 * The pin check lives in the connector (undici's `connect` hook), so it runs on every new connection
 * before any request bytes are written. TLS sessions are not cached in pin mode, so every connection
 * shows its certificate. `connectVia` is the slot for an HTTP CONNECT proxy: when set, the connector
 * asks it for a raw socket to host:port and runs TLS (and the pin check) over that socket, so the proxy
 * never terminates TLS.
 */
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { TunnelError } from '../../errors.js';
import { checkPin } from '../../tls-pin.js';

export type Trust =
  | { readonly kind: 'pin'; readonly pin: string }
  | { readonly kind: 'ca'; readonly ca: string | Buffer }
  | { readonly kind: 'system' };

/**
 * Opens a raw byte stream to host:port (for example through an HTTP CONNECT proxy). A stream carrying a
 * string `viaDescription` (e.g. "proxy http://p:3128") names that hop when it drops before TLS is up.
 */
export type ConnectVia = (host: string, port: number) => Promise<Duplex>;

/** Socket failures that mean the hop under TLS dropped the stream (not a certificate problem). */
const DROP_CODES = new Set(['ECONNRESET', 'EPIPE', 'ERR_SOCKET_CLOSED', 'UND_ERR_SOCKET']);

export interface DispatcherOptions {
  readonly trust: Trust;
  /** TCP + TLS connect limit. Default 10 s. */
  readonly connectTimeoutMs?: number;
  readonly connectVia?: ConnectVia;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

type ConnectOptions = buildConnector.Options;
type ConnectCallback = buildConnector.Callback;

/**
 * The connector's TLS options for each trust: a pin is checked after the handshake (so the chain is not, and no
 * session is resumed without it); a CA is the only one trusted; the system store is Node's default.
 */
function tlsOptionsFor(trust: Trust): Partial<buildConnector.BuildOptions> {
  switch (trust.kind) {
    case 'pin':
      return { rejectUnauthorized: false, maxCachedSessions: 0 };
    case 'ca':
      return { ca: trust.ca, rejectUnauthorized: true };
    case 'system':
      return {};
  }
}

export function createConnector(opts: DispatcherOptions): buildConnector.connector {
  const { trust } = opts;
  const timeout = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const base = buildConnector({ timeout, ...tlsOptionsFor(trust) });

  const finish = (options: ConnectOptions, callback: ConnectCallback) => {
    base(options, (err, socket) => {
      if (err || !socket) {
        callback(err ?? new Error('connect failed'), null);
        return;
      }
      if (trust.kind === 'pin' && options.protocol === 'https:') {
        try {
          const cert = (socket as TLSSocket).getPeerCertificate(false);
          checkPin(trust.pin, cert?.raw, `relay ${options.hostname}:${options.port}`);
        } catch (e) {
          socket.destroy();
          callback(e as Error, null);
          return;
        }
      }
      callback(null, socket);
    });
  };

  const via = opts.connectVia;
  if (!via) return finish;
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    via(options.hostname, port).then(
      (raw) =>
        finish({ ...options, httpSocket: raw as ConnectOptions['httpSocket'] }, (err, socket) => {
          const hop = (raw as { viaDescription?: unknown }).viaDescription;
          const code = (err as { code?: string } | null)?.code;
          if (err && typeof hop === 'string' && code && DROP_CODES.has(code)) {
            const msg = `${hop} dropped the tunnel to ${options.hostname}:${port} before TLS was up (${code})`;
            callback(new TunnelError('PROXY_FAILED', msg, { cause: err }), null);
            return;
          }
          if (err || !socket) callback(err ?? new Error('connect failed'), null);
          else callback(null, socket);
        }),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/** An undici Agent that applies `trust` to every connection. Close it when done. */
export function createRelayDispatcher(opts: DispatcherOptions): Agent {
  if (opts.trust.kind === 'pin' && !opts.trust.pin.startsWith('sha256:')) {
    throw new TunnelError('BAD_INPUT', 'CA pin must be canonical sha256:<hex>; use parseCaPin');
  }
  return new Agent({ connect: createConnector(opts), connections: 4 });
}
