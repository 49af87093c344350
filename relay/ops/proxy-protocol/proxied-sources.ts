/**
 * The clients trusted balancers named in PROXY headers, by connection. The gate (proxy-protocol-gate.ts) records
 * the client on the TCP socket once its header is read; the TLS socket Node builds over that socket is matched by
 * the endpoints both report (as connection-table.ts does) the first time it is asked about, then remembered by
 * object. Entries go with their sockets: the object map is weak and the endpoint map is emptied when the TCP
 * socket closes, so both are bounded by the connections open.
 */
import type { Socket } from 'node:net';
import type { ProxiedClient } from './proxy-header.js';

/** What identifies a connection on both the TCP socket and the TLS socket over it. */
export interface SocketEndpoints {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
}

const bySocket = new WeakMap<object, ProxiedClient>();
const byEndpoints = new Map<string, ProxiedClient>();

function endpointKey(s: SocketEndpoints): string | null {
  if (s.remoteAddress === undefined || s.remotePort === undefined) return null;
  return `${s.remoteAddress}|${s.remotePort}|${s.localAddress ?? ''}|${s.localPort ?? ''}`;
}

/** Records the client a trusted peer named for the connection of `socket` (the accepted TCP socket). */
export function recordProxiedClient(socket: Socket, client: ProxiedClient): void {
  bySocket.set(socket, client);
  const key = endpointKey(socket);
  if (key === null) return;
  byEndpoints.set(key, client);
  socket.once('close', () => byEndpoints.delete(key));
}

/** The client named for the connection `socket` (TCP or TLS) belongs to, or undefined when none was. */
export function proxiedClient(socket: SocketEndpoints & object): ProxiedClient | undefined {
  const known = bySocket.get(socket);
  if (known !== undefined) return known;
  const key = endpointKey(socket);
  const found = key === null ? undefined : byEndpoints.get(key);
  if (found !== undefined) bySocket.set(socket, found);
  return found;
}
