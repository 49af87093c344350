/**
 * The mux over a real TCP connection on loopback (the setting where yamux-js loses bytes: the kernel splits
 * frames at arbitrary offsets): concurrent echo streams with targets, half-close, and a reset.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../shared/clock.js';
import { isTunnelError } from '../shared/errors.js';
import type { MuxSession } from '../shared/net/mux/mux-session.js';
import type { MuxStream } from '../shared/net/mux/mux-stream.js';
import {
  OPEN_OK,
  OPEN_REFUSED,
  openTarget,
  readOpenRequest,
  replyOpen,
} from '../shared/net/mux/open-target.js';
import { muxOverDuplex } from '../shared/net/mux/transport.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const cleanups: (() => void)[] = [];

afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function tcpPair(): Promise<{ client: MuxSession; server: MuxSession }> {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address() as net.AddressInfo;
  const accepted = once(srv, 'connection') as Promise<[net.Socket]>;
  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  const [peer] = await accepted;
  cleanups.push(() => {
    sock.destroy();
    peer.destroy();
    srv.close();
  });
  const client = muxOverDuplex(sock, { clock: realClock, role: 'client' });
  const server = muxOverDuplex(peer, { clock: realClock, role: 'server' });
  return { client, server };
}

function readAll(s: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.on('end', () => resolve(Buffer.concat(parts)));
    s.on('error', reject);
  });
}

describe('mux over real TCP on loopback', () => {
  it('echoes 8 concurrent streams of 1-4 MB byte for byte', async () => {
    const { client, server } = await tcpPair();
    server.on('stream', async (s: MuxStream) => {
      s.on('error', () => {});
      const target = await readOpenRequest(s, { clock: realClock });
      if (target === 'forbidden:1') {
        replyOpen(s, OPEN_REFUSED, 'not allowed');
        return;
      }
      replyOpen(s, OPEN_OK);
      s.pipe(s);
    });
    const jobs = Array.from({ length: 8 }, async (_, i) => {
      const data = randomBytes(1_000_000 + ((i * 400_000) % 3_000_000));
      const s = await openTarget(client, `svc-${i}:80`, { clock: realClock });
      const back = readAll(s);
      s.end(data);
      return { data, back: await back };
    });
    const refused = await openTarget(client, 'forbidden:1', { clock: realClock }).catch((e: unknown) => e);
    expect(isTunnelError(refused, 'STREAM_REFUSED')).toBe(true);
    for (const j of await Promise.all(jobs)) expect(sha(j.back)).toBe(sha(j.data));
    expect(client.closed || server.closed).toBe(false);
  }, 60_000);

  it('closes both sessions when the connection drops, failing open streams with CLOSED', async () => {
    const { client, server } = await tcpPair();
    server.on('stream', (s: MuxStream) => s.on('error', () => {}));
    const s = client.open();
    const err = new Promise<Error>((resolve) => s.on('error', resolve));
    s.write('x');
    const closed = new Promise((resolve) => client.on('close', resolve));
    server.close();
    await closed;
    expect(isTunnelError(await err, 'CLOSED')).toBe(true);
    expect(() => client.open()).toThrow(/closed/);
  }, 20_000);
});
