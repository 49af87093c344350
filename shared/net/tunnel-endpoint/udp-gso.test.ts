/**
 * The UDP GSO/GRO addon (native/udp-gso) on real loopback sockets: that it loads here (npm ci builds it),
 * that a run sent with one sendmsg arrives as one read with its segment size, its argument and bind
 * errors, and that close() stops reading and frees the port.
 */
import { createSocket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { type GsoSocketHandle, type OnRead, udpGso, udpSocketName } from './udp-gso.js';

const LO = Buffer.from([127, 0, 0, 1]);
const addon = udpGso('on');
const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});

function gsoAddon() {
  if (addon === null) throw new Error('the UDP GSO addon did not load: npm ci builds native/udp-gso');
  return addon;
}

function openOn(port: number, onRead: OnRead): GsoSocketHandle {
  const a = gsoAddon();
  const s = a.open(LO, port, onRead, () => {});
  closers.push(() => a.close(s.handle));
  return s;
}

interface Read {
  run: Buffer;
  segmentSize: number;
  from: string;
  port: number;
}

function reads(): { got: Read[]; onRead: OnRead; until(n: number): Promise<void> } {
  const got: Read[] = [];
  const waiters: (() => void)[] = [];
  return {
    got,
    onRead: (run, segmentSize, from, port) => {
      got.push({ run, segmentSize, from, port });
      for (const w of waiters.splice(0)) w();
    },
    async until(n) {
      const end = Date.now() + 5_000;
      while (got.length < n) {
        if (Date.now() > end) throw new Error(`${got.length} of ${n} reads within 5 s`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    },
  };
}

describe('UDP GSO addon', () => {
  it('loads on this machine (npm ci builds native/udp-gso): used unless TUNNEL_UDP_GSO=off', () => {
    expect(typeof addon?.sendSegments).toBe('function');
    expect(udpGso(undefined)).toBe(addon);
    expect(udpGso('')).toBe(addon);
    expect(udpGso('off')).toBeNull();
    expect(udpSocketName('on')).toBe('GSO/GRO');
    expect(udpSocketName(undefined)).toBe('GSO/GRO');
    expect(udpSocketName('off')).toBe('node:dgram');
    let err: unknown;
    try {
      udpGso('fast');
    } catch (e) {
      err = e;
    }
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    expect((err as Error).message).toContain("TUNNEL_UDP_GSO 'fast'");
  });

  it('sends a run in one sendmsg that arrives as one read with its segment size, bytes in order', async () => {
    const rx = reads();
    const receiver = openOn(0, rx.onRead);
    const sender = openOn(0, () => {});
    const run = Array.from({ length: 10 }, (_, i) => Buffer.alloc(i === 9 ? 300 : 1_452, i + 1));
    const sent = gsoAddon().sendSegments(sender.fd, LO, receiver.port, 1_452, run);
    expect(sent).toBe(9 * 1_452 + 300);
    await rx.until(1);
    const read = rx.got[0] as Read;
    expect(read.segmentSize).toBe(1_452);
    expect(read.run.equals(Buffer.concat(run))).toBe(true);
    expect(read.from).toBe('127.0.0.1');
    expect(read.port).toBe(sender.port);
  });

  it('reads a lone datagram from a node:dgram sender as a run of one', async () => {
    const rx = reads();
    const receiver = openOn(0, rx.onRead);
    const tx = createSocket('udp4');
    closers.push(() => tx.close());
    tx.send(Buffer.from('hello'), receiver.port, '127.0.0.1');
    await rx.until(1);
    expect(rx.got[0]?.run.toString()).toBe('hello');
    expect(rx.got[0]?.segmentSize).toBe(5);
  });

  it('refuses arguments that break the GSO rules with a TypeError or RangeError', () => {
    const a = gsoAddon();
    const s = openOn(0, () => {});
    const seg = (n: number, fill = 1) => Buffer.alloc(n, fill);
    const cases: [unknown[], string][] = [
      [[s.fd, LO, 9, 100, []], 'RangeError'],
      [[s.fd, LO, 9, 100, Array.from({ length: 65 }, () => seg(100))], 'RangeError'],
      [[s.fd, LO, 9, 100, [seg(100), seg(99), seg(100)]], 'RangeError'],
      [[s.fd, LO, 9, 100, [seg(101)]], 'RangeError'],
      [[s.fd, LO, 9, 100, [seg(100), seg(0)]], 'RangeError'],
      [[s.fd, LO, 9, 1_452, Array.from({ length: 45 }, () => seg(1_452))], 'RangeError'],
      [[s.fd, Buffer.alloc(5), 9, 100, [seg(100)]], 'RangeError'],
      [[s.fd, LO, 0, 100, [seg(100)]], 'RangeError'],
      [[s.fd, LO, 9, 100, 'x'], 'TypeError'],
      [[s.fd, LO, 9, 100, ['x']], 'TypeError'],
      [[-1, LO, 9, 100, [seg(100)]], 'RangeError'],
      [[s.fd, LO, 9], 'TypeError'],
    ];
    for (const [args, kind] of cases) {
      expect(() => Reflect.apply(a.sendSegments, undefined, args), JSON.stringify(args.slice(3, 4))).toThrow(
        kind === 'TypeError' ? TypeError : RangeError,
      );
    }
    expect(() => Reflect.apply(a.close, undefined, [{}])).toThrow(TypeError);
  });

  it('returns a send error as -errno instead of throwing (a closed descriptor: -EBADF)', () => {
    const a = gsoAddon();
    const s = a.open(
      LO,
      0,
      () => {},
      () => {},
    );
    a.close(s.handle);
    return new Promise<void>((resolve) =>
      setTimeout(() => {
        expect(a.sendSegments(s.fd, LO, 9, 10, [Buffer.alloc(10)])).toBe(-9);
        resolve();
      }, 10),
    );
  });

  it('throws the bind error with its code, and close() frees the port for the next socket', async () => {
    const a = gsoAddon();
    const first = a.open(
      LO,
      0,
      () => {},
      () => {},
    );
    let err: unknown;
    try {
      a.open(
        LO,
        first.port,
        () => {},
        () => {},
      );
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('EADDRINUSE');
    a.close(first.handle);
    await new Promise((r) => setTimeout(r, 0));
    const again = openOn(first.port, () => {});
    expect(again.port).toBe(first.port);
  });

  it('calls onRead no more once close() has returned', async () => {
    const rx = reads();
    const a = gsoAddon();
    const receiver = a.open(LO, 0, rx.onRead, () => {});
    const tx = createSocket('udp4');
    closers.push(() => tx.close());
    tx.send(Buffer.from('one'), receiver.port, '127.0.0.1');
    await rx.until(1);
    a.close(receiver.handle);
    tx.send(Buffer.from('two'), receiver.port, '127.0.0.1');
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.got.map((g) => g.run.toString())).toEqual(['one']);
  });

  it('an IPv6 socket is dual-stack: an IPv4 sender reads as ::ffff:a.b.c.d', async () => {
    const rx = reads();
    const a = gsoAddon();
    const receiver = a.open(Buffer.alloc(16), 0, rx.onRead, () => {});
    closers.push(() => a.close(receiver.handle));
    expect(receiver.address).toBe('::');
    const tx = createSocket('udp4');
    closers.push(() => tx.close());
    tx.send(Buffer.from('v4'), receiver.port, '127.0.0.1');
    await rx.until(1);
    expect(rx.got[0]?.from).toBe('::ffff:127.0.0.1');
  });
});
