import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerAddress } from '../http/source-address.js';
import { proxiedClient, recordProxiedClient } from './proxied-sources.js';

describe('proxied sources', () => {
  const accepted: Socket[] = [];
  const server = createServer((s) => accepted.push(s));
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function acceptOne(): Promise<{ client: Socket; socket: Socket }> {
    const before = accepted.length;
    const client = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
    await new Promise<void>((resolve) => client.once('connect', resolve));
    while (accepted.length === before) await new Promise((r) => setTimeout(r, 5));
    return { client, socket: accepted[accepted.length - 1]! };
  }

  it('gives the named client for the socket and for another socket object on the same connection, until it closes', async () => {
    const { client, socket } = await acceptOne();
    expect(peerAddress(socket)).toBe('127.0.0.1');
    recordProxiedClient(socket, { address: '203.0.113.9', port: 4000 });
    expect(peerAddress(socket)).toBe('203.0.113.9');
    // What the TLS socket over it reports: the same endpoints.
    const over = {
      remoteAddress: socket.remoteAddress,
      remotePort: socket.remotePort,
      localAddress: socket.localAddress,
      localPort: socket.localPort,
    };
    expect(peerAddress(over)).toBe('203.0.113.9');
    // Another connection from the same peer is not the proxied one.
    const other = await acceptOne();
    expect(peerAddress(other.socket)).toBe('127.0.0.1');
    const later = { ...over };
    socket.destroy();
    await new Promise((r) => socket.once('close', r));
    expect(proxiedClient(later)).toBeUndefined();
    client.destroy();
    other.client.destroy();
    other.socket.destroy();
  });
});
