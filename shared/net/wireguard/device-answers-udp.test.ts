/**
 * Device `answersUdp`: a device that does not answer a peer over UDP now (a relay replica that does not hold the
 * peer's session) drops that peer's UDP datagrams as `not-owner` once the peer is known, before it answers or
 * reports a source; the same peer's datagrams through its relayed endpoint are handled, and once the device
 * answers the peer again its UDP datagrams are too.
 */
import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { type DatagramSource, Device, type ReceiveDrop } from './device.js';

function pair() {
  const clock = new FakeClock();
  const ka = generateKeyPair();
  const kb = generateKeyPair();
  const toB: Buffer[] = [];
  const toA: Buffer[] = [];
  const reported: Array<DatagramSource | null> = [];
  const owner = { answers: false };
  const TO_B = { key: 'b', send: (d: Buffer) => toB.push(Buffer.from(d)) > 0 };
  const a = new Device<typeof TO_B>({ privateKey: ka.privateKey, clock, onPacket: () => {} });
  const b = new Device<typeof TO_B>({
    privateKey: kb.privateKey,
    clock,
    answersUdp: () => owner.answers,
    onAuthenticated: (_peer, source) => reported.push(source),
    onPacket: () => {},
  });
  const peerOfA = a.addPeer({ publicKey: kb.publicKey, endpoint: TO_B, allowedIps: [`${B_ADDR}/32`] });
  const relayedA = { key: 'a', send: (d: Buffer) => toA.push(Buffer.from(d)) > 0 };
  b.addPeer({ publicKey: ka.publicKey, endpoint: relayedA, allowedIps: [`${A_ADDR}/32`] });
  const from: DatagramSource = { address: '192.0.2.7', port: 40_000 };
  const pump = (deliver: (d: Buffer) => ReceiveDrop | null): Array<ReceiveDrop | null> => {
    const results: Array<ReceiveDrop | null> = [];
    while (toB.length > 0 || toA.length > 0) {
      for (const d of toB.splice(0)) results.push(deliver(d));
      for (const d of toA.splice(0)) a.receive(d, TO_B);
    }
    return results;
  };
  return { clock, a, b, peerOfA, toB, toA, reported, owner, from, pump, relayedA };
}

describe('Device answersUdp', () => {
  it('drops a peer it does not answer over UDP as not-owner, unanswered and unreported', () => {
    const p = pair();
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'one'));
    const results = p.pump((d) => p.b.receiveFrom(d, p.from));
    expect(results).toEqual(['not-owner']);
    expect(p.toA).toHaveLength(0);
    expect(p.reported).toEqual([]);
    expect(p.b.stats.drops['not-owner']).toBe(1);
  });

  it('handles the same peer over its relayed endpoint, and over UDP again once it answers it', () => {
    const p = pair();
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'one'));
    expect(p.pump((d) => p.b.receive(d, p.relayedA))).toEqual([null, null]);
    // A session is up (made over the relay): its transport data over UDP is still not answered.
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'two'));
    expect(p.pump((d) => p.b.receiveFrom(d, p.from))).toEqual(['not-owner']);
    p.owner.answers = true;
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'three'));
    expect(p.pump((d) => p.b.receiveFrom(d, p.from))).toEqual([null]);
    expect(p.reported.at(-1)).toEqual(p.from);
  });
});
