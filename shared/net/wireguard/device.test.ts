import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, Link, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { generateKeyPair } from '../../keys.js';
import { Device } from './device.js';
import { KEEPALIVE_LEN, MSG_COOKIE_REPLY, MSG_INITIATION, MSG_RESPONSE, MSG_TRANSPORT } from './messages.js';

const T = MSG_TRANSPORT;

describe('Device handshake between two instances', () => {
  it('step by step: both sides derive the same keys and data flows both ways', () => {
    const l = new Link();
    const pkt = udpFrom(A_ADDR, B_ADDR, 'hello');
    l.peerOfA.send(pkt);
    expect(l.queue.map((w) => [w.from, w.data[0], w.data.length])).toEqual([['a', MSG_INITIATION, 148]]);
    expect(l.peerOfA.stagedCount).toBe(1);
    expect(l.peerOfA.isSessionUp).toBe(false);

    l.step(); // B consumes the initiation, answers
    expect(l.queue.map((w) => [w.from, w.data[0], w.data.length])).toEqual([['b', MSG_RESPONSE, 92]]);
    const bNext = l.peerOfB.keypairs.next!;
    expect(bNext).not.toBeNull();
    expect(l.peerOfB.keypairs.current).toBeNull();
    expect(bNext.isInitiator).toBe(false);

    l.step(); // A consumes the response; sends the staged packet as key confirmation
    const aCur = l.peerOfA.keypairs.current!;
    expect(aCur.isInitiator).toBe(true);
    expect(aCur.sendKey.equals(bNext.recvKey)).toBe(true);
    expect(aCur.recvKey.equals(bNext.sendKey)).toBe(true);
    expect(aCur.sendKey.equals(aCur.recvKey)).toBe(false);
    expect(aCur.localIndex).toBe(bNext.remoteIndex);
    expect(aCur.remoteIndex).toBe(bNext.localIndex);
    expect(l.queue.map((w) => [w.from, w.data[0], w.data.length])).toEqual([['a', T, 16 + 48 + 16]]);
    expect(l.queue[0]!.data.readUInt32LE(4)).toBe(bNext.localIndex);
    expect(l.queue[0]!.data.readBigUInt64LE(8)).toBe(0n);

    l.step(); // B decrypts, promotes next -> current
    expect(l.gotB).toEqual([pkt]);
    expect(l.peerOfB.keypairs.current).toBe(bNext);
    expect(l.peerOfB.keypairs.next).toBeNull();

    const back = udpFrom(B_ADDR, A_ADDR, 'world');
    l.peerOfB.send(back);
    l.pump();
    expect(l.gotA).toEqual([back]);
    expect(l.peerOfA.lastHandshakeAt).toBe(l.clock.wallNow());
    expect(l.peerOfB.rxBytes).toBeGreaterThan(0);
    expect(l.peerOfA.txBytes).toBe(148 + 80);
    l.close();
  });

  it('a packet from a source outside AllowedIPs is dropped and counted; padding is stripped', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom('10.9.0.77', B_ADDR, 'spoof'));
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'x'));
    l.pump();
    expect(l.gotB.map((p) => p.length)).toEqual([29]);
    expect(l.peerOfB.drops['allowed-ips']).toBe(1);
    // 33-byte packet padded to 48 and 29-byte padded to 32, plus 16 header + 16 tag
    expect(l.sentBy('a', T).map((w) => w.data.length)).toEqual([80, 64]);
    l.close();
  });

  it('a replayed transport datagram is dropped; a wrong index is counted', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'once'));
    l.pump();
    const data = l.sentBy('a', T)[0]!.data;
    l.b.receive(Buffer.from(data), l.endpointA);
    expect(l.gotB.length).toBe(1);
    expect(l.peerOfB.drops.replay).toBe(1);
    const other = Buffer.from(data);
    other.writeUInt32LE((other.readUInt32LE(4) + 1) >>> 0, 4);
    l.b.receive(other, l.endpointA);
    expect(l.b.stats.drops['unknown-index']).toBe(1);
    l.close();
  });

  it('roaming: the endpoint follows the last authenticated datagram, not unauthenticated ones', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, '1'));
    l.pump();
    l.endpointA = l.endpoint('mem:a-roamed', 'b');
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, '2'));
    const forged = Buffer.from(l.queue[0]!.data);
    forged[20]! ^= 0xff;
    l.b.receive(forged, { key: 'mem:attacker', send: () => true });
    expect(l.peerOfB.endpoint?.key).toBe('mem:a');
    l.pump();
    expect(l.peerOfB.endpoint?.key).toBe('mem:a-roamed');
    expect(l.peerOfB.drops.decrypt).toBe(1);
    l.close();
  });

  it('matching non-zero preshared keys work; a mismatched one never yields a session', () => {
    const psk = Buffer.alloc(32, 7);
    const ok = new Link({ pskA: psk, pskB: psk });
    ok.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'psk'));
    ok.pump();
    expect(ok.gotB.length).toBe(1);
    ok.close();

    const bad = new Link({ pskA: psk });
    bad.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'psk'));
    bad.pump();
    expect(bad.peerOfA.isSessionUp).toBe(false);
    expect(bad.a.stats.drops.handshake).toBe(1); // the response fails to authenticate
    expect(bad.gotB.length).toBe(0);
    bad.close();
  });

  it('an initiation replayed (same timestamp) or flooding within 20 ms is rejected', () => {
    const l = new Link();
    l.peerOfA.sendHandshakeInitiation(false);
    const init = l.queue[0]!.data;
    l.pump();
    l.b.receive(Buffer.from(init), l.endpointA);
    expect(l.b.stats.drops.replay).toBe(1);
    // two fresh initiations 10 ms apart: the second is a flood
    l.clock.advance(6000);
    l.peerOfA.sendHandshakeInitiation(false);
    const first = l.queue.shift()!.data;
    l.clock.advance(6000);
    l.peerOfA.sendHandshakeInitiation(false);
    const second = l.queue.shift()!.data;
    l.b.receive(Buffer.from(first), l.endpointA);
    l.clock.advance(10);
    l.b.receive(Buffer.from(second), l.endpointA);
    expect(l.b.stats.drops.handshake).toBe(1);
    l.close();
  });

  it('a handshake with a bad mac1 is dropped before any DH; an unknown static key is counted', () => {
    const l = new Link();
    l.peerOfA.sendHandshakeInitiation(false);
    const init = Buffer.from(l.queue.shift()!.data);
    init[120]! ^= 1;
    l.b.receive(init, l.endpointA);
    expect(l.b.stats.drops.mac1).toBe(1);
    const stranger = new Device({
      privateKey: generateKeyPair().privateKey,
      onPacket: () => {},
    });
    const c = new Device({ privateKey: generateKeyPair().privateKey, clock: l.clock, onPacket: () => {} });
    const toB = {
      key: 'mem:b',
      send: (d: Buffer) => {
        l.b.receive(Buffer.from(d), { key: 'mem:c', send: () => true });
        return true;
      },
    };
    c.addPeer({ publicKey: l.keysB.publicKey, endpoint: toB, allowedIps: [] }).sendKeepalive();
    expect(l.b.stats.drops['unknown-peer']).toBe(1);
    stranger.close();
    c.close();
    l.close();
  });

  it('under load, an initiation without mac2 gets a cookie reply; the retry carries a valid mac2', () => {
    const l = new Link({ underLoadB: () => true });
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'c'));
    l.pump();
    expect(l.sentBy('b').map((w) => [w.data[0], w.data.length])).toEqual([[MSG_COOKIE_REPLY, 64]]);
    expect(l.b.stats.drops['cookie-sent']).toBe(1);
    expect(l.peerOfA.cookies.hasCookie).toBe(true);
    const firstInit = l.sentBy('a', MSG_INITIATION)[0]!.data;
    expect(firstInit.subarray(132).equals(Buffer.alloc(16))).toBe(true);
    l.clock.advance(5400); // retransmit timer
    l.pump();
    const retry = l.sentBy('a', MSG_INITIATION)[1]!.data;
    expect(retry.subarray(132).equals(Buffer.alloc(16))).toBe(false);
    expect(l.gotB.length).toBe(1);
    l.close();
  });

  it('under load with authenticated sources (the hub): no cookie round trip, but the per-source rate limit', () => {
    const l = new Link({ underLoadB: () => true, authenticatedB: true });
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'c'));
    l.pump();
    // The first initiation is answered at once: no cookie reply, no 5 s wait for a retry.
    expect(l.b.stats.drops['cookie-sent']).toBe(0);
    expect(l.sentBy('b', MSG_COOKIE_REPLY)).toHaveLength(0);
    expect(l.gotB.length).toBe(1);
    // A source replaying initiations faster than 20/s (burst 5) is still limited.
    const init = l.sentBy('a', MSG_INITIATION)[0]!.data;
    for (let i = 0; i < 10; i++) l.b.receive(Buffer.from(init), l.endpointA);
    expect(l.b.stats.drops['rate-limited']).toBeGreaterThanOrEqual(5);
    l.close();
  });

  it('garbage never throws out of receive and is counted', () => {
    const l = new Link();
    for (const g of [
      Buffer.alloc(0),
      Buffer.from([1]),
      Buffer.alloc(148, 1),
      Buffer.from('01000100', 'hex'),
    ]) {
      expect(() => l.b.receive(g, l.endpointA)).not.toThrow();
    }
    const s = l.b.stats.drops;
    expect(s.malformed + s['bad-type'] + s.mac1).toBe(4);
    l.close();
  });

  it('Device.send routes by destination; caps and bad config are TunnelErrors', () => {
    const l = new Link();
    l.a.send(udpFrom(A_ADDR, B_ADDR, 'routed'));
    l.a.send(udpFrom(A_ADDR, '10.200.0.1', 'nowhere'));
    l.pump();
    expect(l.gotB.length).toBe(1);
    expect(l.a.stats.drops['no-route']).toBe(1);
    const d = new Device({
      privateKey: generateKeyPair().privateKey,
      maxPeers: 1,
      onPacket: () => {},
    });
    d.addPeer({ publicKey: generateKeyPair().publicKey, allowedIps: ['10.0.0.0/8'] });
    expect(() => d.addPeer({ publicKey: generateKeyPair().publicKey, allowedIps: [] })).toThrow(
      expect.objectContaining({ code: 'WG_PEER_LIMIT' }),
    );
    expect(() => d.addPeer({ publicKey: 'nope', allowedIps: [] })).toThrow(
      expect.objectContaining({ code: 'KEY_INVALID' }),
    );
    expect(() => new Device({ privateKey: Buffer.alloc(32, 1), mtu: 10, onPacket: () => {} })).toThrow(
      expect.objectContaining({ code: 'BAD_CONFIG' }),
    );
    for (const bad of [
      { maxPeers: 0 },
      { timers: { rekeyTimeout: -1 } },
      { timers: { rekeyAfterMessages: 0n } },
    ]) {
      expect(() => new Device({ privateKey: Buffer.alloc(32, 1), onPacket: () => {}, ...bad })).toThrow(
        expect.objectContaining({ code: 'BAD_CONFIG' }),
      );
    }
    d.close();
    l.close();
  });

  it('removePeer forgets its indices and AllowedIPs', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'x'));
    l.pump();
    expect(l.b.stats.indices).toBeGreaterThan(0);
    expect(l.b.removePeer(l.keysA.publicKey)).toBe(true);
    expect(l.b.stats.indices).toBe(0);
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'y'));
    l.pump();
    expect(l.b.stats.drops['unknown-index']).toBe(1);
    expect(l.b.getPeer(l.keysA.publicKey)).toBeUndefined();
    l.close();
  });

  it('IPv6 inner packets: delivered cut to payload length + 40, source checked against IPv6 AllowedIPs', () => {
    const l = new Link();
    l.b.removePeer(l.keysA.publicKey);
    const pb = l.b.addPeer({
      publicKey: l.keysA.publicKey,
      endpoint: l.endpointA,
      allowedIps: ['fd00::1/128'],
    });
    const good = Buffer.alloc(40 + 13);
    good[0] = 0x60; // version 6
    good.writeUInt16BE(13, 4); // payload length
    good[6] = 17;
    good[7] = 64;
    Buffer.from('fd000000000000000000000000000001', 'hex').copy(good, 8); // source fd00::1
    const bad = Buffer.from(good);
    bad[23] = 2; // fd00::2 is not allowed
    const lying = Buffer.from(good);
    lying.writeUInt16BE(500, 4); // payload length beyond the packet
    l.peerOfA.send(good);
    l.peerOfA.send(bad);
    l.peerOfA.send(lying);
    l.pump();
    expect(l.gotB).toEqual([good]);
    expect(l.gotB[0]!.length).toBe(53); // padded to 64 on the wire, cut back to 40 + 13
    expect(pb.drops['allowed-ips']).toBe(1);
    expect(pb.drops['bad-ip']).toBe(1);
    l.close();
  });

  it('a cookie reply that does not decrypt with our last mac1 is ignored', () => {
    const l = new Link({ underLoadB: () => true });
    l.peerOfA.sendHandshakeInitiation(false);
    l.step();
    const reply = Buffer.from(l.queue.shift()!.data);
    expect(reply[0]).toBe(MSG_COOKIE_REPLY);
    reply[40]! ^= 1;
    l.a.receive(reply, l.endpointB);
    expect(l.a.stats.drops['cookie-ignored']).toBe(1);
    expect(l.peerOfA.cookies.hasCookie).toBe(false);
    l.close();
  });

  it('keepalives are 32 bytes on the wire', () => {
    const l = new Link();
    l.peerOfA.sendHandshakeInitiation(false);
    l.pump();
    expect(l.sentBy('a', T).map((w) => w.data.length)).toEqual([KEEPALIVE_LEN]);
    expect(l.peerOfB.keypairs.current).not.toBeNull();
    l.close();
  });
});
