/**
 * Mux over ARQ over real UDP sockets on loopback, real clock: sender-side random loss, a path change
 * (the client moves to a new socket mid-transfer, the server answers wherever the last datagram came
 * from, as WireGuard roaming does), and dead-link detection when the peer disappears.
 */
import { createHash, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../shared/clock.js';
import { isTunnelError } from '../shared/errors.js';
import { ArqSession } from '../shared/net/arq/arq-session.js';
import type { MuxStream } from '../shared/net/mux/mux-stream.js';
import { OPEN_OK, openTarget, readOpenRequest, replyOpen } from '../shared/net/mux/open-target.js';
import { muxOverArq } from '../shared/net/mux/transport.js';
import { mulberry32 } from './helpers/faulty-path.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const sockets: dgram.Socket[] = [];
const sessions: ArqSession[] = [];

const closedSockets = new WeakSet<dgram.Socket>();

function closeQuietly(s: dgram.Socket): void {
  if (closedSockets.has(s)) return;
  closedSockets.add(s);
  s.close();
}

afterEach(() => {
  for (const s of sessions.splice(0)) s.close();
  for (const s of sockets.splice(0)) closeQuietly(s);
});

async function udpSocket(): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
  return s;
}

const port = (s: dgram.Socket): number => (s.address() as AddressInfo).port;

/** One endpoint: an ARQ session over a UDP socket that can be swapped, replying to the last sender. */
async function endpoint(loss: number, seed: number, deadLinkMs = 30_000) {
  const rand = mulberry32(seed);
  let sock = await udpSocket();
  let peer = { port: 0, address: '127.0.0.1' };
  const arq = new ArqSession({
    conv: 0x5eed,
    mtu: 1392,
    clock: realClock,
    deadLinkMs,
    output: (d) => {
      if (peer.port === 0 || rand() < loss || closedSockets.has(sock)) return;
      sock.send(d, peer.port, peer.address);
    },
  });
  sessions.push(arq);
  const listen = (s: dgram.Socket): void => {
    s.on('message', (m, rinfo) => {
      peer = { port: rinfo.port, address: rinfo.address };
      arq.input(m);
    });
  };
  listen(sock);
  return {
    arq,
    get port() {
      return port(sock);
    },
    setPeer(p: number) {
      peer = { port: p, address: '127.0.0.1' };
    },
    /** Moves to a fresh socket (a path change); the old one still receives for `graceMs`, then closes. */
    async rebind(graceMs: number) {
      const old = sock;
      sock = await udpSocket();
      listen(sock);
      setTimeout(() => closeQuietly(old), graceMs);
    },
    closeSocket() {
      closeQuietly(sock);
    },
  };
}

function collect(s: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.on('end', () => resolve(Buffer.concat(parts)));
    s.on('error', reject);
  });
}

function send(s: Duplex, data: Buffer): void {
  let off = 0;
  const go = (): void => {
    while (off < data.length) {
      const ok = s.write(data.subarray(off, off + 32_768));
      off += 32_768;
      if (!ok) {
        s.once('drain', go);
        return;
      }
    }
    s.end();
  };
  go();
}

describe('streams over real UDP on loopback', () => {
  it('carries 4 concurrent echo streams through 3% loss and a path change, byte for byte', async () => {
    const a = await endpoint(0.03, 1);
    const b = await endpoint(0.03, 2);
    a.setPeer(b.port);
    const client = muxOverArq(a.arq, { clock: realClock, role: 'client' });
    const server = muxOverArq(b.arq, { clock: realClock, role: 'server' });
    server.on('stream', async (s: MuxStream) => {
      s.on('error', () => {});
      const target = await readOpenRequest(s, { clock: realClock });
      replyOpen(s, OPEN_OK, target);
      s.pipe(s);
    });
    const jobs = [0, 1, 2, 3].map(async (i) => {
      const data = randomBytes(1_000_000 + i * 250_000);
      const s = await openTarget(client, `upstream-${i}:443`, { clock: realClock });
      const back = collect(s);
      send(s, data);
      return { data, back: await back };
    });
    // Change path while the transfers run.
    while (a.arq.stats.bytesIn < 1_000_000) await new Promise((r) => setTimeout(r, 10));
    const before = a.arq.stats.bytesIn;
    await a.rebind(300);
    const results = await Promise.all(jobs);
    for (const r of results) expect(sha(r.back)).toBe(sha(r.data));
    expect(a.arq.stats.bytesIn - before).toBeGreaterThan(1_000_000);
    expect(a.arq.stats.retransmitsFast + a.arq.stats.retransmitsTimeout).toBeGreaterThan(0);
    client.close();
    server.close();
  }, 60_000);

  it('declares the link dead when the peer disappears, closing the mux and its streams', async () => {
    const a = await endpoint(0, 3, 1_500);
    const b = await endpoint(0, 4);
    a.setPeer(b.port);
    const client = muxOverArq(a.arq, { clock: realClock, role: 'client' });
    const server = muxOverArq(b.arq, { clock: realClock, role: 'server' });
    server.on('stream', (s: MuxStream) => s.resume());
    const s = client.open();
    const streamErr = new Promise<Error>((resolve) => s.on('error', resolve));
    s.write(randomBytes(10_000));
    await new Promise((r) => setTimeout(r, 200));
    b.closeSocket();
    const started = Date.now();
    s.write(randomBytes(10_000));
    const closed = await new Promise<Error | undefined>((resolve) => client.on('close', resolve));
    expect(isTunnelError(closed, 'TIMEOUT')).toBe(true);
    expect(isTunnelError(await streamErr, 'TIMEOUT')).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(a.arq.closed).toBe(true);
  }, 30_000);
});
