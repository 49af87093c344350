import { createHash, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { duplexPair, type PairOptions } from '../../../test/helpers/duplex-pair.js';
import { FakeClock, realClock } from '../../clock.js';
import { isTunnelError, TunnelError } from '../../errors.js';
import { encodeHeader, FLAG_ACK, FLAG_SYN, TYPE_DATA, TYPE_WINDOW_UPDATE } from './frame.js';
import { MuxSession } from './mux-session.js';
import type { MuxStream } from './mux-stream.js';
import { type MuxBindingOptions, muxOverDuplex } from './transport.js';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function pair(
  p: PairOptions = {},
  o: Partial<MuxBindingOptions> = {},
): { client: MuxSession; server: MuxSession; inbound: MuxStream[]; wires: [Duplex, Duplex] } {
  const wires = duplexPair(p);
  const base = { clock: realClock, keepAliveMs: 0, ...o };
  const client = muxOverDuplex(wires[0], { ...base, role: 'client' });
  const server = muxOverDuplex(wires[1], { ...base, role: 'server' });
  const inbound: MuxStream[] = [];
  server.on('stream', (s: MuxStream) => inbound.push(s));
  return { client, server, inbound, wires };
}

function readAll(s: Duplex): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.on('end', () => resolve(Buffer.concat(parts)));
    s.on('error', reject);
  });
}

function writeAll(s: Duplex, data: Buffer, chunk = 50_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let off = 0;
    s.on('error', reject);
    const go = (): void => {
      while (off < data.length) {
        const ok = s.write(data.subarray(off, off + chunk));
        off += chunk;
        if (!ok) {
          s.once('drain', go);
          return;
        }
      }
      s.end(() => resolve());
    };
    go();
  });
}

function nextStream(m: MuxSession): Promise<MuxStream> {
  return new Promise((resolve) => m.once('stream', resolve));
}

function errorOf(s: Duplex): Promise<Error> {
  return new Promise((resolve) => s.once('error', resolve));
}

describe('MuxSession over an in-memory byte stream', () => {
  it('carries data both ways with half-close', async () => {
    const { client, server } = pair();
    const accepted = nextStream(server);
    const s = client.open();
    const up = randomBytes(700_000);
    const down = randomBytes(300_000);
    const clientRead = readAll(s);
    const sent = writeAll(s, up);
    const r = await accepted;
    const got = await readAll(r);
    await sent;
    expect(sha(got)).toBe(sha(up));
    // The server side can still write after receiving FIN.
    await writeAll(r, down);
    expect(sha(await clientRead)).toBe(sha(down));
    expect(client.streamCount).toBe(0);
    expect(server.streamCount).toBe(0);
  });

  it('keeps several concurrent streams intact over a stream re-chunked into random pieces', async () => {
    const { client, server } = pair({ maxPiece: 3000, seed: 11 });
    server.on('stream', (s: MuxStream) => {
      // Echo each stream back reversed in order of arrival, through the same stream.
      readAll(s).then((b) => writeAll(s, b));
    });
    const jobs = Array.from({ length: 8 }, async (_, i) => {
      const data = randomBytes(200_000 + i * 37_000);
      const s = client.open();
      const back = readAll(s);
      await writeAll(s, data, 10_000 + i * 999);
      expect(sha(await back)).toBe(sha(data));
    });
    await Promise.all(jobs);
  });

  it('lets a fast stream finish while another reader never reads (memory bounded by the window)', async () => {
    const { client, server } = pair({}, { maxWindow: 1024 * 1024 });
    const slowAccepted = nextStream(server);
    const slow = client.open();
    slow.write(randomBytes(4 * 1024 * 1024));
    const slowIn = await slowAccepted;
    slowIn.pause();
    const fastAccepted = nextStream(server);
    const fast = client.open();
    const data = randomBytes(8 * 1024 * 1024);
    const sent = writeAll(fast, data);
    const got = await readAll(await fastAccepted);
    await sent;
    expect(sha(got)).toBe(sha(data));
    // The paused stream holds at most its window plus the Readable's buffer; the rest waits at the sender.
    expect(slowIn.queuedBytes + slowIn.readableLength).toBeLessThanOrEqual(slowIn.recvWindow + 128 * 1024);
    expect(slow.writableLength).toBeGreaterThan(2 * 1024 * 1024);
    slowIn.resume();
  });

  it('delivers everything to a reader that keeps pausing, through many credit cycles', async () => {
    const { client, server } = pair({ maxPiece: 20_000, seed: 3 });
    const accepted = nextStream(server);
    const s = client.open();
    const data = randomBytes(3 * 1024 * 1024);
    const sent = writeAll(s, data, 100_000);
    const r = await accepted;
    const parts: Buffer[] = [];
    let maxHeld = 0;
    r.on('data', (c: Buffer) => {
      parts.push(c);
      maxHeld = Math.max(maxHeld, r.queuedBytes + r.readableLength);
      if (parts.length % 7 === 0) {
        r.pause();
        setTimeout(() => r.resume(), 2);
      }
    });
    await new Promise((resolve) => r.on('end', resolve));
    await sent;
    expect(sha(Buffer.concat(parts))).toBe(sha(data));
    expect(maxHeld).toBeLessThanOrEqual(r.recvWindow + 128 * 1024);
    expect(client.closed || server.closed).toBe(false);
  });

  it('keeps the session healthy when data arrives for a stream destroyed locally', async () => {
    const { client, server } = pair();
    const accepted = nextStream(server);
    const s = client.open();
    s.on('error', () => {});
    s.write(randomBytes(100_000));
    const r = await accepted;
    r.on('error', () => {});
    r.destroy();
    await new Promise((resolve) => s.once('close', resolve));
    // A new stream still works end to end.
    const accepted2 = nextStream(server);
    const s2 = client.open();
    const back = readAll(s2);
    const r2 = await Promise.all([writeAll(s2, Buffer.from('again')), accepted2]).then(([, x]) => x);
    expect((await readAll(r2)).toString()).toBe('again');
    r2.end('ok');
    expect((await back).toString()).toBe('ok');
    expect(server.streamCount + client.streamCount).toBe(0);
  });

  it('refuses streams over the cap with STREAM_LIMIT and a local open() over it', async () => {
    const { client, server } = pair({}, { maxStreams: 3 });
    const ss = [client.open(), client.open(), client.open()];
    for (const s of ss) s.write('x');
    expect(() => client.open()).toThrow(/maxStreams/);
    // The server's cap is smaller than the client's: the fourth stream is reset by the server.
    const w = duplexPair();
    const cl = muxOverDuplex(w[0], { clock: realClock, keepAliveMs: 0, role: 'client' });
    const sv = muxOverDuplex(w[1], { clock: realClock, keepAliveMs: 0, role: 'server', maxStreams: 3 });
    const opened = [cl.open(), cl.open(), cl.open(), cl.open()];
    const err = await errorOf(opened[3]!);
    expect(isTunnelError(err, 'STREAM_LIMIT')).toBe(true);
    expect(sv.streamCount).toBe(3);
    expect(sv.stats.refused.limit).toBe(1);
    expect(server.streamCount).toBe(3);
  });

  it('with acceptStreams false, resets every stream the peer opens at once and buffers none of its data', async () => {
    const w = duplexPair();
    const opener = muxOverDuplex(w[0], { clock: realClock, keepAliveMs: 0, role: 'server' });
    const refuser = muxOverDuplex(w[1], {
      clock: realClock,
      keepAliveMs: 0,
      role: 'client',
      acceptStreams: false,
    });
    const seen: MuxStream[] = [];
    refuser.on('stream', (s: MuxStream) => seen.push(s));
    const n = 20;
    const errors = Array.from({ length: n }, () => {
      const s = opener.open();
      const err = errorOf(s);
      // A whole window's worth, which an accepting side would have to hold for a reader.
      s.write(Buffer.alloc(256 * 1024, 7));
      return err;
    });
    for (const err of await Promise.all(errors)) {
      expect(isTunnelError(err, 'STREAM_RESET')).toBe(true);
      expect(err.message).toMatch(/protocol-error/);
    }
    expect(seen).toEqual([]);
    expect(refuser.streamCount).toBe(0);
    expect(refuser.stats.refused).toEqual({ limit: 0, goingAway: 0, protocolViolation: n });
    expect(refuser.stats.streamsAccepted).toBe(0);
    // The session itself carries on: the refusing side still opens streams of its own.
    const accepted = nextStream(opener);
    refuser.open().end('still up');
    expect((await readAll(await accepted)).toString()).toBe('still up');
  });

  it('propagates a reset with its code', async () => {
    const { client, server } = pair();
    const accepted = nextStream(server);
    const s = client.open();
    s.write('hello');
    const r = await accepted;
    const err = errorOf(s);
    r.on('error', () => {});
    r.destroy(new TunnelError('STREAM_REFUSED', 'not on the allowlist'));
    expect(isTunnelError(await err, 'STREAM_REFUSED')).toBe(true);
    const accepted2 = nextStream(server);
    const s2 = client.open();
    s2.write('x');
    const r2 = await accepted2;
    const err2 = errorOf(r2);
    s2.destroy();
    const e2 = await err2;
    expect(isTunnelError(e2, 'STREAM_RESET')).toBe(true);
    expect(e2.message).toMatch(/cancel/);
    const accepted3 = nextStream(server);
    const s3 = client.open();
    s3.write('y');
    const r3 = await accepted3;
    const err3 = errorOf(s3);
    r3.on('error', () => {});
    r3.destroy(new TunnelError('UPSTREAM_FAILED', 'connect ECONNREFUSED'));
    expect(isTunnelError(await err3, 'UPSTREAM_FAILED')).toBe(true);
  });

  it('closes the session with a protocol error when a peer sends beyond the window', async () => {
    const [raw, wire] = duplexPair();
    const server = muxOverDuplex(wire, { clock: realClock, keepAliveMs: 0, role: 'server' });
    const closed = new Promise<Error | undefined>((resolve) => server.on('close', resolve));
    const replies: Buffer[] = [];
    raw.on('data', (c: Buffer) => replies.push(c));
    raw.write(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_SYN, 1, 0));
    raw.write(encodeHeader(TYPE_DATA, 0, 1, 300 * 1024));
    raw.write(Buffer.alloc(300 * 1024));
    const err = await closed;
    expect(isTunnelError(err, 'WIRE_MALFORMED')).toBe(true);
    await new Promise((r) => setImmediate(r));
    const all = Buffer.concat(replies);
    // Last frame: GoAway with the protocol-error code.
    expect(all.subarray(all.length - 12).toString('hex')).toBe('000300000000000000000001');
  });

  it('refuses new streams after GoAway and keeps the existing ones', async () => {
    const { client, server } = pair();
    const accepted = nextStream(server);
    const s = client.open();
    s.write('a');
    const r = await accepted;
    const gone = new Promise((resolve) => client.once('goaway', resolve));
    server.goAway();
    expect(await gone).toBe(0);
    expect(() => client.open()).toThrow(/going away/);
    const back = readAll(s);
    await writeAll(r, Buffer.from('still here'));
    expect((await back).toString()).toBe('still here');
  });
});

describe('MuxSession stream answers', () => {
  /** An acceptor fed one opener's SYN with data; returns the frame headers it writes (type, flags, id, length). */
  function acceptor(initialWindow?: number) {
    const frames: { type: number; flags: number; id: number; length: number }[] = [];
    let partial = 0; // bytes of a Data payload still to skip
    const mux = new MuxSession({
      role: 'server',
      clock: new FakeClock(0),
      keepAliveMs: 0,
      ...(initialWindow === undefined ? {} : { initialWindow }),
      write: (b) => {
        if (partial > 0) {
          partial -= b.length;
          return true;
        }
        const f = { type: b[1]!, flags: b.readUInt16BE(2), id: b.readUInt32BE(4), length: b.readUInt32BE(8) };
        frames.push(f);
        if (f.type === TYPE_DATA) partial = f.length;
        return true;
      },
    });
    const inbound: MuxStream[] = [];
    mux.on('stream', (st: MuxStream) => inbound.push(st));
    mux.input(encodeHeader(TYPE_WINDOW_UPDATE, FLAG_SYN, 1, 0));
    mux.input(Buffer.concat([encodeHeader(TYPE_DATA, 0, 1, 2), Buffer.from('hi')]));
    return { mux, frames, inbound };
  }

  it('with the base window an accepted stream sends nothing until it writes; its first frame is the answer', async () => {
    const { mux, frames, inbound } = acceptor();
    expect(inbound).toHaveLength(1);
    await new Promise((r) => setImmediate(r));
    expect(frames).toEqual([]);
    inbound[0]!.write(Buffer.from('yo'));
    await new Promise((r) => setImmediate(r));
    expect(frames).toEqual([{ type: TYPE_DATA, flags: 0, id: 1, length: 2 }]);
    mux.close();
  });

  it('an acceptor with more than the base window grants it at once with ACK', () => {
    const { mux, frames, inbound } = acceptor(1024 * 1024);
    expect(inbound).toHaveLength(1);
    expect(frames).toEqual([
      { type: TYPE_WINDOW_UPDATE, flags: FLAG_ACK, id: 1, length: 1024 * 1024 - 256 * 1024 },
    ]);
    mux.close();
  });
});

describe('MuxSession timers (fake clock)', () => {
  it('measures RTT with pings and closes with TIMEOUT when pings go unanswered', async () => {
    const clock = new FakeClock(0);
    const [a, b] = duplexPair();
    const client = muxOverDuplex(a, { clock, role: 'client', keepAliveMs: 1_000, pingTimeoutMs: 500 });
    const server = muxOverDuplex(b, { clock, role: 'server', keepAliveMs: 0 });
    const rtt = client.ping();
    await new Promise((r) => setImmediate(r));
    expect(await rtt).toBe(0);
    server.close();
    b.removeAllListeners('data');
    const closed = new Promise<Error | undefined>((resolve) => client.on('close', resolve));
    clock.advance(1_000);
    clock.advance(600);
    const err = await closed;
    expect(isTunnelError(err, 'TIMEOUT') || isTunnelError(err, 'CLOSED')).toBe(true);
  });

  it('keeps the session when a ping times out while other bytes keep arriving', async () => {
    const clock = new FakeClock(0);
    const m = new MuxSession({
      role: 'client',
      clock,
      keepAliveMs: 0,
      pingTimeoutMs: 1_000,
      write: () => true,
    });
    const p = m.ping().catch((e: unknown) => e);
    for (let i = 0; i < 12; i++) {
      clock.advance(100);
      m.input(encodeHeader(TYPE_WINDOW_UPDATE, 0, 7, 0)); // a frame for an unknown stream: ignored, but alive
    }
    expect(isTunnelError(await p, 'TIMEOUT')).toBe(true);
    expect(m.closed).toBe(false);
    const q = m.ping().catch((e: unknown) => e);
    clock.advance(1_100);
    expect(isTunnelError(await q, 'TIMEOUT')).toBe(true);
    expect(m.closed).toBe(true);
  });

  it('caps pending pings', async () => {
    const clock = new FakeClock(0);
    const m = new MuxSession({ role: 'client', clock, keepAliveMs: 0, write: () => true });
    const pending = Array.from({ length: 64 }, () => m.ping().catch((e: unknown) => e));
    const over = await m.ping().catch((e: unknown) => e);
    expect(isTunnelError(over, 'LIMIT_EXCEEDED')).toBe(true);
    m.close();
    for (const p of pending) expect(isTunnelError(await p, 'CLOSED')).toBe(true);
  });

  it('resets a stream idle for idleTimeoutMs', async () => {
    const clock = new FakeClock(0);
    const [a, b] = duplexPair();
    const client = muxOverDuplex(a, { clock, role: 'client', keepAliveMs: 0, idleTimeoutMs: 5_000 });
    const server = muxOverDuplex(b, { clock, role: 'server', keepAliveMs: 0 });
    const accepted = nextStream(server);
    const s = client.open();
    s.write('x');
    const r = await accepted;
    const localErr = errorOf(s);
    const remoteErr = errorOf(r);
    clock.advance(4_000);
    expect(s.destroyed).toBe(false);
    clock.advance(2_000);
    expect(isTunnelError(await localErr, 'TIMEOUT')).toBe(true);
    const e = await remoteErr;
    expect(e.message).toMatch(/idle-timeout/);
  });
});

describe('MuxSession scheduling', () => {
  it('gives a stream that becomes ready its turn within one frame of a busy stream, even when every write blocks', async () => {
    const sent: number[] = []; // stream id of each Data frame header, in order
    const mux = new MuxSession({
      role: 'client',
      clock: new FakeClock(0),
      keepAliveMs: 0,
      initialWindow: 16 * 1024 * 1024,
      write: (b) => {
        if (b.length === 12 && b[1] === TYPE_DATA) sent.push(b.readUInt32BE(4));
        return false; // the transport is always "full": one frame per drain
      },
    });
    const bulk = mux.open();
    const small = mux.open();
    // The peer's ACK raising the bulk stream's send window beyond the base 256 KiB.
    mux.input(encodeHeader(TYPE_WINDOW_UPDATE, 0, bulk.id, 8 * 1024 * 1024));
    bulk.write(randomBytes(4 * 1024 * 1024));
    for (let i = 0; i < 8; i++) mux.transportDrained();
    expect(sent.every((id) => id === bulk.id)).toBe(true);
    const before = sent.length;
    small.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    for (let i = 0; i < 3; i++) mux.transportDrained();
    const after = sent.slice(before);
    expect(after.indexOf(small.id)).toBeGreaterThanOrEqual(0);
    expect(after.indexOf(small.id)).toBeLessThanOrEqual(1);
    // And the bulk stream keeps going once the small one is served.
    expect(after.at(-1)).toBe(bulk.id);
    mux.close();
  });

  it('a lone stream emits its frames inside write(); with another stream waiting it takes its turn', () => {
    const sent: number[] = []; // stream id of each Data frame header, in order
    let full = false;
    const mux = new MuxSession({
      role: 'client',
      clock: new FakeClock(0),
      keepAliveMs: 0,
      maxFrameData: 1024,
      write: (b) => {
        if (b.length === 12 && b[1] === TYPE_DATA) sent.push(b.readUInt32BE(4));
        return !full;
      },
    });
    const a = mux.open();
    const b = mux.open();
    a.write(randomBytes(4 * 1024));
    expect(sent).toEqual([a.id, a.id, a.id, a.id]); // no pump in between: all four frames at once
    full = true;
    a.write(randomBytes(2 * 1024)); // one frame, then the transport is full: it waits for drain
    b.write(randomBytes(1024)); // another stream waits: b queues behind a's turn
    expect(sent.slice(4)).toEqual([a.id]);
    full = false;
    mux.transportDrained();
    expect(sent.slice(5)).toEqual([a.id, b.id]);
    mux.close();
  });
});
