/** The timer state machine (reference §9), driven by FakeClock with shortened thresholds where useful. */
import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, Link, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { Device, type Endpoint } from './device.js';
import { MSG_INITIATION, MSG_RESPONSE, MSG_TRANSPORT } from './messages.js';

const toB = (s: string) => udpFrom(A_ADDR, B_ADDR, s);
const toA = (s: string) => udpFrom(B_ADDR, A_ADDR, s);

function up(l: Link): void {
  l.peerOfA.send(toB('hello'));
  l.pump();
  expect(l.gotB.length).toBe(1);
}

describe('timers', () => {
  it('the passive keepalive goes out 10 s after data is received, not before', () => {
    const l = new Link();
    up(l);
    const before = l.sentBy('b', MSG_TRANSPORT).length;
    l.clock.advance(9_999);
    expect(l.sentBy('b', MSG_TRANSPORT).length).toBe(before);
    l.clock.advance(1);
    const ka = l.sentBy('b', MSG_TRANSPORT).slice(before);
    expect(ka.map((w) => w.data.length)).toEqual([32]);
    l.close();
  });

  it('initiator rekeys after RekeyAfterTime on send; the responder does not', () => {
    const l = new Link({ timers: { rekeyAfterTime: 20_000 } });
    up(l);
    const first = l.peerOfA.keypairs.current!;
    l.clock.advance(20_001);
    l.pump();
    l.peerOfB.send(toA('from responder'));
    l.pump();
    expect(l.sentBy('b', MSG_INITIATION).length).toBe(0);
    l.peerOfA.send(toB('after rekey time'));
    expect(l.sentBy('a', MSG_INITIATION).length).toBe(2);
    l.pump();
    const second = l.peerOfA.keypairs.current!;
    expect(second).not.toBe(first);
    expect(l.peerOfA.keypairs.previous).toBe(first);
    expect(l.peerOfB.keypairs.current!.recvKey.equals(second.sendKey)).toBe(true);
    l.peerOfA.send(toB('under the new key'));
    l.pump();
    expect(l.gotB.map((p) => p.subarray(28).toString())).toEqual([
      'hello',
      'after rekey time',
      'under the new key',
    ]);
    l.close();
  });

  it('rekeys after RekeyAfterMessages (shortened to 5)', () => {
    const l = new Link({ timers: { rekeyAfterMessages: 5n } });
    up(l); // counter 0 used
    l.clock.advance(5_001); // past the 5 s initiation rate limit
    for (let i = 1; i <= 4; i++) l.peerOfA.send(toB(`m${i}`));
    // the next nonce is 5: not yet past RekeyAfterMessages
    expect(l.sentBy('a', MSG_INITIATION).length).toBe(1);
    l.peerOfA.send(toB('m5')); // next nonce 6 > 5
    expect(l.sentBy('a', MSG_INITIATION).length).toBe(2);
    l.pump();
    expect(l.peerOfA.keypairs.current!.sendCounter).toBe(1); // the confirmation keepalive
    expect(l.gotB.length).toBe(6);
    l.close();
  });

  it('RejectAfterTime: an old keypair is not used to send and packets under it are dropped', () => {
    const l = new Link({ timers: { rejectAfterTime: 30_000 } });
    up(l);
    for (let i = 0; i < 29; i++) {
      l.clock.advance(1_000);
      l.pump();
    }
    l.peerOfA.send(toB('late but valid'));
    const inFlight = l.queue.splice(0);
    l.clock.advance(1_000); // keypair is now 30 s old
    for (const w of inFlight) l.b.receive(Buffer.from(w.data), l.endpointA);
    expect(l.peerOfB.drops['expired-keypair']).toBe(1);
    expect(l.peerOfA.isSessionUp).toBe(false);
    const initsBefore = l.sentBy('a', MSG_INITIATION).length;
    l.peerOfA.send(toB('needs a new session'));
    expect(l.peerOfA.stagedCount).toBe(1);
    expect(l.sentBy('a', MSG_INITIATION).length).toBe(initsBefore + 1);
    l.pump();
    expect(l.gotB.at(-1)!.subarray(28).toString()).toBe('needs a new session');
    l.close();
  });

  it('retries every RekeyTimeout + jitter(0..333 ms), gives up after 20 initiations and drops staged packets', () => {
    const l = new Link();
    l.filter = () => false; // nothing reaches B
    let gaveUp = 0;
    l.peerOfA.on('handshake-timeout', () => gaveUp++);
    l.peerOfA.send(toB('lost'));
    l.peerOfA.send(toB('lost too'));
    for (let t = 0; t < 130_000; t += 50) l.clock.advance(50);
    const inits = l.sentBy('a', MSG_INITIATION);
    expect(inits.length).toBe(20);
    const gaps = inits.slice(1).map((w, i) => w.at - inits[i]!.at);
    for (const g of gaps) {
      expect(g).toBeGreaterThanOrEqual(5_000);
      expect(g).toBeLessThan(5_334 + 50);
    }
    expect(new Set(gaps).size).toBeGreaterThan(1); // jittered
    expect(gaveUp).toBe(1);
    expect(l.peerOfA.stagedCount).toBe(0);
    expect(l.peerOfA.drops['handshake-timeout']).toBe(2);
    // every retry uses a fresh sender index and a fresh ephemeral
    expect(new Set(inits.map((w) => w.data.readUInt32LE(4))).size).toBe(20);
    l.close();
  });

  it('key confirmation: the responder sends nothing under `next` until the initiator confirms it', () => {
    const l = new Link();
    l.peerOfA.sendHandshakeInitiation(false);
    l.step(); // B consumes, responds
    l.peerOfB.send(toA('waiting'));
    expect(l.queue.map((w) => w.data[0])).toEqual([MSG_RESPONSE]);
    expect(l.peerOfB.stagedCount).toBe(1);
    l.step(); // A consumes the response and sends a keepalive at once
    expect(l.queue.map((w) => [w.data[0], w.data.length])).toEqual([[MSG_TRANSPORT, 32]]);
    l.step(); // B promotes next and flushes its staged packet
    expect(l.peerOfB.keypairs.current).not.toBeNull();
    l.pump();
    expect(l.gotA.map((p) => p.subarray(28).toString())).toEqual(['waiting']);
    l.close();
  });

  it('the previous keypair still decrypts packets that were in flight across a rekey (both directions)', () => {
    const l = new Link();
    up(l);
    l.peerOfB.send(toA('b in flight'));
    l.peerOfA.send(toB('a in flight'));
    const held = l.queue.splice(0);
    l.clock.advance(5_001);
    l.peerOfA.sendHandshakeInitiation(false);
    l.pump();
    expect(l.peerOfA.keypairs.previous).not.toBeNull();
    expect(l.peerOfB.keypairs.previous).not.toBeNull();
    for (const w of held) {
      if (w.from === 'a') l.b.receive(Buffer.from(w.data), l.endpointA);
      else l.a.receive(Buffer.from(w.data), l.endpointB);
    }
    expect(l.gotA.map((p) => p.subarray(28).toString())).toEqual(['b in flight']);
    expect(l.gotB.map((p) => p.subarray(28).toString())).toEqual(['hello', 'a in flight']);
    l.close();
  });

  it('"stopped hearing back": a new initiation 15 s (+ jitter) after unanswered data', () => {
    const l = new Link();
    up(l);
    l.clock.advance(10_000);
    l.pump(); // B's passive keepalive
    l.filter = (w) => w.from === 'a';
    const t0 = l.clock.now();
    l.peerOfA.send(toB('anyone there?'));
    l.pump();
    for (let t = 0; t < 16_000; t += 10) l.clock.advance(10);
    const inits = l.sentBy('a', MSG_INITIATION).filter((w) => w.at > t0);
    expect(inits.length).toBe(1);
    expect(inits[0]!.at - t0).toBeGreaterThanOrEqual(15_000);
    expect(inits[0]!.at - t0).toBeLessThan(15_344);
    l.close();
  });

  it('persistent keepalive every N seconds while idle', () => {
    const l = new Link();
    up(l);
    l.clock.advance(10_000);
    l.pump();
    l.peerOfA.persistentKeepalive = 25;
    l.peerOfA.sendKeepalive();
    l.pump();
    const start = l.clock.now();
    for (let i = 0; i < 60; i++) {
      l.clock.advance(1_000);
      l.pump();
    }
    const kas = l.sentBy('a', MSG_TRANSPORT).filter((w) => w.at > start && w.data.length === 32);
    expect(kas.map((w) => w.at - start)).toEqual([25_000, 50_000]);
    l.close();
  });

  it('initiations are rate limited to one per RekeyTimeout; staged packets are bounded (drop oldest)', () => {
    const l = new Link();
    l.filter = () => false;
    for (let i = 0; i < 130; i++) l.peerOfA.send(toB(`p${i}`));
    expect(l.sentBy('a', MSG_INITIATION).length).toBe(1);
    expect(l.peerOfA.stagedCount).toBe(128);
    expect(l.peerOfA.drops['staged-overflow']).toBe(2);
    l.filter = () => true;
    l.clock.advance(5_400);
    l.pump();
    expect(l.gotB.length).toBe(128);
    expect(l.gotB[0]!.subarray(28).toString()).toBe('p2');
    l.close();
  });

  it('key material is zeroed 3 x RejectAfterTime (540 s) after the last session', () => {
    const l = new Link();
    up(l);
    expect(l.a.stats.indices).toBe(1);
    for (let i = 0; i < 539; i++) {
      l.clock.advance(1_000);
      l.pump();
    }
    expect(l.peerOfA.keypairs.all().length).toBe(1);
    l.clock.advance(1_000);
    expect(l.peerOfA.keypairs.all()).toEqual([]);
    expect(l.peerOfB.keypairs.all()).toEqual([]);
    expect(l.a.stats.indices).toBe(0);
    expect(l.b.stats.indices).toBe(0);
    l.close();
  });
});

describe('handshake over a transport that answers synchronously', () => {
  it('completing inside send() cancels the retransmit timer: no second initiation', () => {
    const clock = new FakeClock();
    const ka = generateKeyPair();
    const kb = generateKeyPair();
    const initiations: number[] = [];
    const devices: { a?: Device; b?: Device } = {};
    const mk = (priv: Buffer) => new Device({ privateKey: priv, clock, onPacket: () => {} });
    /** Each side's endpoint for the other: delivers at once, inside the sender's call, as an in-process relay does. */
    const endB: Endpoint = {
      key: 'mem:b',
      send: (d) => {
        if (d[0] === MSG_INITIATION) initiations.push(clock.now());
        devices.b!.receive(Buffer.from(d), endA);
        return true;
      },
    };
    const endA: Endpoint = {
      key: 'mem:a',
      send: (d) => {
        devices.a!.receive(Buffer.from(d), endB);
        return true;
      },
    };
    devices.a = mk(ka.privateKey);
    devices.b = mk(kb.privateKey);
    const peerOfA = devices.a.addPeer({
      publicKey: kb.publicKey,
      endpoint: endB,
      allowedIps: [`${B_ADDR}/32`],
    });
    devices.b.addPeer({ publicKey: ka.publicKey, endpoint: endA, allowedIps: [`${A_ADDR}/32`] });
    peerOfA.send(toB('hello'));
    expect(peerOfA.isSessionUp).toBe(true);
    clock.advance(6_000); // past RekeyTimeout + the largest jitter
    expect(initiations.length).toBe(1);
    devices.a.close();
    devices.b.close();
  });
});
