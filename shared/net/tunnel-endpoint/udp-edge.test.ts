/**
 * The UDP edge on a real UDP transport, datagrams sent from a real socket: a STUN Binding success goes to the
 * owner's `stun` (and is `stun-unexpected` when it answers none of its requests), or to WireGuard when the owner
 * asks no STUN server; disco goes to receiveDisco as from `udp` at the sender; anything else to receiveFrom, whose
 * verdict is the outcome.
 */
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { DISCO_MAGIC } from '../disco/disco-codec.js';
import { encodeBindingRequest, encodeBindingSuccess, parseStunRequest } from '../stun/stun-codec.js';
import type { ReceiveDrop } from '../wireguard/device.js';
import type { DiscoSource } from './disco-peers.js';
import { type UdpEdgeOptions, type UdpEdgeOutcome, udpEdgeReceiver } from './udp-edge.js';
import { UdpTransport } from './udp-transport.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** The transport, an endpoint that records what it is handed, and a sender on another socket. */
async function edge(o: Omit<UdpEdgeOptions, 'onOutcome'> & { verdict?: ReceiveDrop | null } = {}) {
  const udp = await UdpTransport.open({ host: '127.0.0.1', port: 0, gso: null });
  closers.push(() => udp.close());
  const tx = createSocket('udp4');
  tx.bind(0, '127.0.0.1');
  await once(tx, 'listening');
  closers.push(() => new Promise<void>((r) => tx.close(() => r())));
  const got: { wireGuard: Buffer[]; disco: DiscoSource[]; outcomes: UdpEdgeOutcome[] } = {
    wireGuard: [],
    disco: [],
    outcomes: [],
  };
  let wake: () => void = () => {};
  const endpoint = {
    receiveFrom: (d: Buffer) => {
      got.wireGuard.push(Buffer.from(d));
      return o.verdict === undefined ? 'malformed' : o.verdict;
    },
    receiveDisco: (_d: Buffer, from: DiscoSource) => {
      got.disco.push(from);
      wake();
    },
  };
  const onOutcome = (x: UdpEdgeOutcome) => {
    got.outcomes.push(x);
    wake();
  };
  udp.listen(udpEdgeReceiver(endpoint, { ...o, onOutcome }));
  const send = async (d: Buffer): Promise<void> => {
    const arrived = new Promise<void>((r) => (wake = r));
    tx.send(d, udp.port, '127.0.0.1');
    await Promise.race([
      arrived,
      new Promise((_, no) => setTimeout(() => no(new Error('not handed')), 2_000)),
    ]);
  };
  return { got, send, senderPort: tx.address().port };
}

function stunSuccess(): Buffer {
  const req = parseStunRequest(encodeBindingRequest(Buffer.alloc(12, 7)));
  if (req.kind !== 'request') throw new Error('not a request');
  return encodeBindingSuccess(req, { address: Buffer.from([127, 0, 0, 1]), port: 4242 });
}

describe('the UDP edge of a tunnel endpoint', () => {
  it('hands STUN answers to the gatherer and says whether they answered a request', async () => {
    const answers: boolean[] = [true, false];
    const stunSeen: Buffer[] = [];
    const e = await edge({
      stun: (d) => {
        stunSeen.push(Buffer.from(d));
        return answers.shift() ?? false;
      },
    });
    await e.send(stunSuccess());
    await e.send(stunSuccess());
    expect(stunSeen).toHaveLength(2);
    expect(e.got.outcomes).toEqual(['stun', 'stun-unexpected']);
    expect(e.got.wireGuard).toHaveLength(0);
  });

  it('hands STUN answers to the gatherer when the owner counts no outcome (the agent)', async () => {
    const udp = await UdpTransport.open({ host: '127.0.0.1', port: 0, gso: null });
    closers.push(() => udp.close());
    let handed: () => void = () => {};
    const stunSeen = new Promise<void>((r) => (handed = r));
    const endpoint = { receiveFrom: () => 'malformed' as const, receiveDisco: () => {} };
    udp.listen(
      udpEdgeReceiver(endpoint, {
        stun: () => {
          handed();
          return true;
        },
      }),
    );
    const tx = createSocket('udp4');
    closers.push(() => new Promise<void>((r) => tx.close(() => r())));
    tx.send(stunSuccess(), udp.port, '127.0.0.1');
    await Promise.race([
      stunSeen,
      new Promise((_, no) => setTimeout(() => no(new Error('not handed')), 2_000)),
    ]);
  });

  it('gives STUN answers to WireGuard when the owner asks no STUN server', async () => {
    const e = await edge();
    await e.send(stunSuccess());
    expect(e.got.wireGuard).toEqual([stunSuccess()]);
    expect(e.got.outcomes).toEqual(['malformed']);
  });

  it('hands disco to the disco side as from udp at the sender', async () => {
    const e = await edge({ stun: () => true });
    await e.send(Buffer.concat([DISCO_MAGIC, Buffer.alloc(40)]));
    expect(e.got.disco).toEqual([{ via: 'udp', address: '127.0.0.1', port: e.senderPort }]);
    expect(e.got.outcomes).toEqual([]);
  });

  it('hands anything else to WireGuard, whose verdict is the outcome', async () => {
    const e = await edge({ stun: () => true, verdict: null });
    await e.send(Buffer.from([4, 0, 0, 0, 1, 2, 3]));
    expect(e.got.wireGuard).toEqual([Buffer.from([4, 0, 0, 0, 1, 2, 3])]);
    expect(e.got.outcomes).toEqual([null]);
  });
});
