import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { TunnelError } from '../../errors.js';
import { splice } from './splice.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A TCP server collecting what it receives, and a client socket connected to it. */
async function tcpPair(): Promise<{
  server: Server;
  client: Socket;
  received: () => Promise<Buffer>;
  peer: Socket;
}> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const accepted = once(server, 'connection');
  const client = new Socket();
  client.connect(port, '127.0.0.1');
  await once(client, 'connect');
  const [peer] = (await accepted) as [Socket];
  const chunks: Buffer[] = [];
  peer.on('data', (c: Buffer) => chunks.push(c));
  const ended = once(peer, 'end');
  cleanups.push(() => {
    client.destroy();
    peer.destroy();
    server.close();
  });
  return {
    server,
    client,
    peer,
    received: async () => {
      await ended;
      return Buffer.concat(chunks);
    },
  };
}

/** Counts the socket's write calls to the kernel (each _write or _writev is one write/writev). */
function countWrites(socket: Socket): () => number {
  let writes = 0;
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  socket._write = (chunk, enc, cb) => {
    writes++;
    write(chunk, enc, cb);
  };
  if (writev) {
    socket._writev = (chunks, cb) => {
      writes++;
      writev(chunks, cb);
    };
  }
  return () => writes;
}

async function udpPair(): Promise<{ rx: UdpSocket; tx: UdpSocket; port: number }> {
  const rx = createSocket('udp4');
  const tx = createSocket('udp4');
  rx.bind(0, '127.0.0.1');
  await once(rx, 'listening');
  cleanups.push(() => {
    rx.close();
    tx.close();
  });
  return { rx, tx, port: (rx.address() as AddressInfo).port };
}

describe('splice: one receive burst, one socket write', () => {
  it('merges the chunks of datagrams read in one poll into few writes, bytes in order', async () => {
    const { rx, tx, port } = await udpPair();
    const { client, received } = await tcpPair();
    const writes = countWrites(client);
    // Stands in for a mux stream: each datagram's payload is pushed from its own 'message' callback.
    const stream = new PassThrough();
    splice(stream, client, (e) => new TunnelError('STREAM_RESET', e.message));
    const count = 32;
    const sent: Buffer[] = [];
    let got = 0;
    const all = new Promise<void>((resolve) => {
      rx.on('message', (m: Buffer) => {
        stream.write(m);
        if (++got === count) resolve();
      });
    });
    // Queue every datagram before the receiver's loop polls, so they arrive as one burst.
    rx.setRecvBufferSize?.(1 << 20);
    await new Promise<void>((resolve) => {
      let left = count;
      for (let i = 0; i < count; i++) {
        const d = Buffer.alloc(1392, i);
        sent.push(d);
        tx.send(d, port, '127.0.0.1', () => {
          if (--left === 0) resolve();
        });
      }
    });
    await all;
    stream.end();
    const bytes = await received();
    expect(bytes.equals(Buffer.concat(sent))).toBe(true);
    expect(writes()).toBeLessThan(count / 4);
  });

  it('still pauses the stream when the client does not read', async () => {
    const { client, peer } = await tcpPair();
    peer.pause();
    const stream = new PassThrough({ highWaterMark: 16 * 1024 });
    splice(stream, client, (e) => new TunnelError('STREAM_RESET', e.message));
    const chunk = Buffer.alloc(64 * 1024, 7);
    let accepted = 0;
    // Write until the stream refuses: a client that never reads must bound what the splice takes in.
    for (let i = 0; i < 4096; i++) {
      accepted += chunk.length;
      if (!stream.write(chunk)) {
        await Promise.race([once(stream, 'drain'), new Promise((r) => setTimeout(r, 300))]);
        if (stream.writableNeedDrain) break;
      }
    }
    expect(stream.writableNeedDrain).toBe(true);
    expect(accepted).toBeLessThan(64 * 1024 * 1024);
  });
});
