/**
 * A plain-HTTP request sent to the TLS port (`curl http://relay:8443/...`) fails the TLS handshake: OpenSSL sees an
 * HTTP method where a ClientHello belongs (ERR_SSL_HTTP_REQUEST). Instead of closing the connection without a word,
 * the relay answers it in plain HTTP: 400 with the error envelope saying the port speaks TLS and to use https://.
 * The raw socket of each connection is found by its peer address and port (only while it is open, so the map is
 * bounded by the connection cap).
 */
import type { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { TunnelError } from '../../../shared/errors.js';

const HINT = new TunnelError(
  'TLS_REQUIRED',
  'this port speaks TLS: use https:// (a plain-HTTP request reached the TLS port)',
);

function keyOf(address: string | undefined, port: number | undefined): string | null {
  return address === undefined || port === undefined ? null : `${address}|${port}`;
}

/** Watches `server`; returns a function that stops watching. */
export function answerPlainHttp(server: EventEmitter): () => void {
  const raw = new Map<string, Socket>();
  const onConnection = (socket: unknown): void => {
    if (!(socket instanceof Socket)) return;
    const key = keyOf(socket.remoteAddress, socket.remotePort);
    if (key === null) return;
    raw.set(key, socket);
    socket.once('close', () => {
      if (raw.get(key) === socket) raw.delete(key);
    });
  };
  const onTlsError = (err: unknown, tls: unknown): void => {
    const code = err instanceof Error && 'code' in err ? err.code : undefined;
    if (code !== 'ERR_SSL_HTTP_REQUEST' || !(tls instanceof TLSSocket)) return;
    const key = keyOf(tls.remoteAddress, tls.remotePort);
    const socket = key === null ? undefined : raw.get(key);
    if (socket === undefined || socket.destroyed || !socket.writable) return;
    const body = JSON.stringify(HINT.toJSON());
    socket.end(
      'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  };
  server.prependListener('connection', onConnection);
  server.on('tlsClientError', onTlsError);
  return () => {
    server.off('connection', onConnection);
    server.off('tlsClientError', onTlsError);
    raw.clear();
  };
}
