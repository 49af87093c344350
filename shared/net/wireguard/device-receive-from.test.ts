/**
 * Device.receiveFrom: datagrams from a network address that names no peer (UDP). Two devices in memory: A's
 * datagrams reach B through receiveFrom with a source address, B's replies go back to A. The source is reported
 * (onAuthenticated) only for datagrams that authenticated, before B answers; garbage, replays and forgeries return
 * their drop reason and report nothing; under load a UDP source must prove itself with a cookie even on a device
 * whose relayed sources are trusted (authenticatedSources).
 */
import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { type DatagramSource, Device, type ReceiveDrop } from './device.js';

function pair(o: { underLoad?: boolean } = {}) {
  const clock = new FakeClock();
  const ka = generateKeyPair();
  const kb = generateKeyPair();
  const toB: Buffer[] = [];
  const toA: Buffer[] = [];
  const toSource: Array<[Buffer, DatagramSource]> = [];
  const reported: Array<DatagramSource | null> = [];
  const gotB: Buffer[] = [];
  const TO_B = { key: 'b', send: (d: Buffer) => toB.push(Buffer.from(d)) > 0 };
  const a = new Device<typeof TO_B>({ privateKey: ka.privateKey, clock, onPacket: () => {} });
  const b = new Device<typeof TO_B>({
    privateKey: kb.privateKey,
    clock,
    authenticatedSources: true,
    ...(o.underLoad ? { underLoad: () => true } : {}),
    sendToSource: (d, s) => toSource.push([Buffer.from(d), s]) > 0,
    onAuthenticated: (_peer, source) => {
      // Before B answers: nothing B sends for this datagram has gone out yet.
      reported.push(source);
    },
    onPacket: (p) => gotB.push(Buffer.from(p)),
  });
  const peerOfA = a.addPeer({ publicKey: kb.publicKey, endpoint: TO_B, allowedIps: [`${B_ADDR}/32`] });
  const peerOfB = b.addPeer({
    publicKey: ka.publicKey,
    endpoint: { key: 'a', send: (d: Buffer) => toA.push(Buffer.from(d)) > 0 },
    allowedIps: [`${A_ADDR}/32`],
  });
  const from: DatagramSource = { address: '192.0.2.7', port: 40_000 };
  /** Delivers everything queued both ways until quiet; returns B's results for what it received. */
  const pump = (source = from): Array<ReceiveDrop | null> => {
    const results: Array<ReceiveDrop | null> = [];
    while (toB.length > 0 || toA.length > 0) {
      for (const d of toB.splice(0)) results.push(b.receiveFrom(d, source));
      for (const d of toA.splice(0)) a.receive(d, TO_B);
    }
    return results;
  };
  return { clock, a, b, peerOfA, peerOfB, toB, toA, toSource, reported, gotB, from, pump, TO_B };
}

describe('Device.receiveFrom', () => {
  it('reports the source of authenticated datagrams only, and returns drop reasons for the rest', () => {
    const p = pair();
    const sent: Buffer[] = [];
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'one'));
    // Keep a copy of A's transport datagram to replay it.
    const results = [] as Array<ReceiveDrop | null>;
    while (p.toB.length > 0 || p.toA.length > 0) {
      for (const d of p.toB.splice(0)) {
        sent.push(Buffer.from(d));
        results.push(p.b.receiveFrom(d, p.from));
      }
      for (const d of p.toA.splice(0)) p.a.receive(d, p.TO_B);
    }
    expect(results).toEqual([null, null]); // the initiation and the data packet
    expect(p.reported).toEqual([p.from, p.from]);
    expect(p.gotB).toHaveLength(1);

    const elsewhere = { address: '198.51.100.9', port: 1 };
    const transport = sent[1]!;
    const forged = Buffer.from(transport);
    forged[forged.length - 1]! ^= 1;
    expect(p.b.receiveFrom(Buffer.from(transport), elsewhere)).toBe('replay');
    expect(p.b.receiveFrom(forged, elsewhere)).toBe('decrypt');
    expect(p.b.receiveFrom(Buffer.from('ab'), elsewhere)).toBe('malformed');
    expect(p.b.receiveFrom(Buffer.alloc(40, 9), elsewhere)).toBe('bad-type');
    expect(p.b.receiveFrom(Buffer.from(sent[0]!), elsewhere)).toBe('replay'); // the initiation's timestamp
    expect(p.reported).toEqual([p.from, p.from]);
    expect(p.toSource).toEqual([]);
    p.a.close();
    p.b.close();
  });

  it('under load a UDP source gets a cookie reply even with authenticatedSources, and its retry gets in', () => {
    const p = pair({ underLoad: true });
    p.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'hello'));
    expect(p.pump()).toEqual(['cookie-sent']);
    expect(p.toSource).toHaveLength(1);
    expect(p.toSource[0]![1]).toBe(p.from);
    expect(p.reported).toEqual([]);
    // A takes the cookie, and its next initiation (after the retry interval) carries mac2.
    p.a.receive(p.toSource[0]![0], p.TO_B);
    p.clock.advance(5_500);
    expect(p.pump().filter((r) => r !== null)).toEqual([]);
    expect(p.gotB.map((x) => x.subarray(28).toString())).toEqual(['hello']);
    expect(p.reported.every((s) => s === p.from)).toBe(true);
    p.a.close();
    p.b.close();
  });
});
