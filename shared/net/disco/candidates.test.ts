import { createSocket } from 'node:dgram';
import type { NetworkInterfaceInfo } from 'node:os';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { startStunResponder } from '../../../relay/data/stun/stun-responder.js';
import { FakeClock, realClock } from '../../clock.js';
import { encodeBindingSuccess, parseStunRequest } from '../stun/stun-codec.js';
import { CandidateGatherer, type GatheredCandidates } from './candidates.js';
import { type InterfaceList, localCandidates } from './local-candidates.js';

const iface = (address: string, internal = false): NetworkInterfaceInfo =>
  address.includes(':')
    ? { address, family: 'IPv6', internal, netmask: 'ffff::', mac: '', cidr: null, scopeid: 0 }
    : { address, family: 'IPv4', internal, netmask: '255.0.0.0', mac: '', cidr: null };

const HOST: InterfaceList = {
  lo: [iface('127.0.0.1', true), iface('::1', true)],
  eth0: [iface('192.168.1.20'), iface('fe80::1'), iface('2001:db8::20')],
  wlan0: [iface('169.254.3.3'), iface('10.0.0.5'), iface('192.168.1.20')],
};

describe('local candidates', () => {
  it('lists non-internal, non-link-local addresses the bound socket answers on', () => {
    expect(localCandidates(HOST, '0.0.0.0', 4000)).toEqual([
      { host: '192.168.1.20', port: 4000 },
      { host: '10.0.0.5', port: 4000 },
    ]);
    expect(localCandidates(HOST, '::', 4000).map((c) => c.host)).toEqual([
      '192.168.1.20',
      '2001:db8::20',
      '10.0.0.5',
    ]);
    expect(localCandidates(HOST, '10.0.0.5', 7)).toEqual([{ host: '10.0.0.5', port: 7 }]);
    expect(localCandidates(HOST, '127.0.0.1', 7)).toEqual([]);
  });
});

/** A gatherer on a FakeClock whose requests land in `sent`; `answer()` plays a STUN server. */
function fakeGatherer(
  o: { servers?: { host: string; port: number }[]; interfaces?: () => InterfaceList } = {},
) {
  const clock = new FakeClock();
  const sent: { datagram: Buffer; host: string; port: number }[] = [];
  const changes: GatheredCandidates[] = [];
  const g = new CandidateGatherer({
    clock,
    send: (datagram, host, port) => {
      sent.push({ datagram, host, port });
      return true;
    },
    bindAddress: '0.0.0.0',
    port: 4000,
    stunServers: o.servers ?? [
      { host: '203.0.113.1', port: 3478 },
      { host: '203.0.113.2', port: 3478 },
    ],
    interfaces: o.interfaces ?? (() => HOST),
    onChange: (c) => changes.push(c),
  });
  /** The server at `to` answers the last request it got, having seen the sender at `mapped`. */
  const answer = (to: string, mapped: { host: string; port: number }) => {
    const req = [...sent].reverse().find((s) => s.host === to)!;
    const parsed = parseStunRequest(req.datagram);
    if (parsed.kind !== 'request') throw new Error('not a request');
    const address = Buffer.from(mapped.host.split('.').map(Number));
    return g.receiveStun(encodeBindingSuccess(parsed, { address, port: mapped.port }), {
      address: to,
      port: 3478,
    });
  };
  return { clock, sent, changes, g, answer };
}

describe('candidate gatherer', () => {
  it('lists the reflexive address first when the STUN servers agree', () => {
    const { g, answer, changes } = fakeGatherer();
    g.start();
    expect(changes.at(-1)).toEqual({ candidates: localCandidates(HOST, '0.0.0.0', 4000), stun: 'unknown' });
    expect(answer('203.0.113.1', { host: '198.51.100.4', port: 61000 })).toBe(true);
    expect(answer('203.0.113.2', { host: '198.51.100.4', port: 61000 })).toBe(true);
    expect(changes.at(-1)).toEqual({
      candidates: [{ host: '198.51.100.4', port: 61000 }, ...localCandidates(HOST, '0.0.0.0', 4000)],
      reflexive: { host: '198.51.100.4', port: 61000 },
      stun: 'ok',
    });
    g.stop();
  });

  it('says the mapping varies by destination when two servers see different ports', () => {
    const { g, answer } = fakeGatherer();
    g.start();
    answer('203.0.113.1', { host: '198.51.100.4', port: 61000 });
    answer('203.0.113.2', { host: '198.51.100.4', port: 61001 });
    expect(g.current.stun).toBe('varies');
    g.stop();
  });

  it('resends unanswered requests, then says no-answer', () => {
    const { g, sent, clock } = fakeGatherer();
    g.start();
    clock.advance(2_999);
    expect(sent.filter((s) => s.host === '203.0.113.1').length).toBe(3);
    expect(g.current.stun).toBe('unknown');
    clock.advance(1);
    expect(g.current).toEqual({ candidates: localCandidates(HOST, '0.0.0.0', 4000), stun: 'no-answer' });
    g.stop();
  });

  it('keeps the last reflexive address through unanswered rounds; a network change forgets it', () => {
    let list = HOST;
    const { g, clock, answer } = fakeGatherer({ interfaces: () => list });
    const mapping = { host: '198.51.100.4', port: 61000 };
    g.start();
    answer('203.0.113.1', mapping);
    answer('203.0.113.2', mapping);
    expect(g.current).toMatchObject({ stun: 'ok', reflexive: mapping });
    clock.advance(20_000 + 3_000); // the next round, unanswered (UDP dropped for a while)
    expect(g.current.stun).toBe('no-answer');
    expect(g.current.reflexive).toEqual(mapping);
    expect(g.current.candidates[0]).toEqual(mapping);
    list = { eth0: [iface('192.168.7.7')] };
    clock.advance(5_000);
    expect(g.current.reflexive).toBeUndefined();
    expect(g.current.candidates).toEqual([{ host: '192.168.7.7', port: 4000 }]);
    g.stop();
  });

  it('refreshes every 20 s and at once when the interfaces change', () => {
    let list = HOST;
    const { g, sent, clock, changes, answer } = fakeGatherer({ interfaces: () => list });
    g.start();
    // The servers answer every round (a round no server answers backs off).
    for (let t = 0; t <= 60_000; t += 100) {
      for (const server of ['203.0.113.1', '203.0.113.2'])
        answer(server, { host: '198.51.100.4', port: 61000 });
      clock.advance(100);
    }
    const rounds = (n: number) =>
      new Set(sent.slice(0, n).map((s) => s.datagram.subarray(8, 20).toString('hex')));
    expect(rounds(sent.length).size).toBe(2 * 4); // t = 0, 20, 40, 60 s, two servers each
    const before = sent.length;
    list = { eth0: [iface('192.168.7.7')] };
    clock.advance(5_000);
    expect(changes.at(-1)?.candidates).toContainEqual({ host: '192.168.7.7', port: 4000 });
    expect(sent.length).toBeGreaterThan(before);
    g.stop();
    expect(clock.pendingTimers).toBe(0);
  });

  it('backs off while no server answers, up to 16 x 20 s; a network change asks at once again', () => {
    let list = HOST;
    const { g, sent, clock } = fakeGatherer({ interfaces: () => list });
    g.start();
    const roundStarts = () => {
      const seen = new Map<string, number>();
      for (const s of sent) seen.set(s.datagram.subarray(8, 20).toString('hex'), 0);
      return seen.size / 2;
    };
    clock.advance(3_000);
    expect(g.current.stun).toBe('no-answer');
    clock.advance(40_000 - 1);
    expect(roundStarts()).toBe(1);
    clock.advance(1); // 3 s + 40 s, then 80, 160, 320, 320 s after each round's 3 s
    expect(roundStarts()).toBe(2);
    clock.advance(3_000 + 80_000 + 3_000 + 160_000 + 3_000 + 320_000 + 3_000 + 320_000);
    expect(roundStarts()).toBe(6);
    const before = sent.length;
    list = { eth0: [iface('192.168.7.7')] };
    clock.advance(5_000);
    expect(sent.length).toBeGreaterThan(before);
    g.stop();
  });

  it('ignores answers it did not ask for, and never throws on random datagrams (property)', () => {
    const { g, sent } = fakeGatherer();
    g.start();
    const req = sent[0]!;
    const wrongTxid = Buffer.from(req.datagram);
    wrongTxid[19] = (wrongTxid[19] ?? 0) ^ 1;
    const parsed = parseStunRequest(wrongTxid);
    if (parsed.kind !== 'request') throw new Error('not a request');
    const reply = encodeBindingSuccess(parsed, { address: Buffer.from([1, 2, 3, 4]), port: 9 });
    expect(g.receiveStun(reply, { address: req.host, port: 3478 })).toBe(false);
    const right = parseStunRequest(req.datagram);
    if (right.kind !== 'request') throw new Error('not a request');
    const good = encodeBindingSuccess(right, { address: Buffer.from([1, 2, 3, 4]), port: 9 });
    expect(g.receiveStun(good, { address: '203.0.113.9', port: 3478 })).toBe(false); // not the server asked
    expect(g.receiveStun(good, { address: req.host, port: 3479 })).toBe(false);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (raw) => {
        expect(g.receiveStun(Buffer.from(raw), { address: '203.0.113.1', port: 3478 })).toBe(false);
      }),
    );
    expect(g.current.stun).toBe('unknown');
    g.stop();
  });
});

describe('candidate gatherer over real UDP', () => {
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  it("learns the socket's mapping from the relay's STUN responder", async () => {
    const stun = await startStunResponder({ host: '127.0.0.1', port: 0, clock: realClock });
    closers.push(() => stun.close());
    const socket = createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => socket.close(() => r())));
    const { port } = socket.address();
    const gathered = new Promise<GatheredCandidates>((resolve) => {
      const g = new CandidateGatherer({
        clock: realClock,
        send: (d, host, p) => {
          socket.send(d, p, host);
          return true;
        },
        bindAddress: '127.0.0.1',
        port,
        stunServers: [{ host: '127.0.0.1', port: stun.port }],
        onChange: (c) => {
          if (c.stun !== 'unknown') resolve(c);
        },
      });
      socket.on('message', (msg, rinfo) => g.receiveStun(msg, rinfo));
      closers.push(() => g.stop());
      g.start();
    });
    const c = await gathered;
    expect(c.stun).toBe('ok');
    expect(c.reflexive).toEqual({ host: '127.0.0.1', port });
  });
});
