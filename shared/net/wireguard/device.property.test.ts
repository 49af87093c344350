/** Property tests: nothing a peer (or anyone) sends can make Device.receive throw. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, Link, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { CookieGenerator } from './cookie.js';
import { defaultAead } from './crypto/aead.js';
import { MSG_INITIATION } from './messages.js';
import { sealTransport } from './transport.js';

describe('Device.receive under hostile input', () => {
  it('random bytes and mutated real datagrams never throw and are counted', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'seed'));
    l.pump();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'more'));
    l.pump();
    expect(l.gotB.length).toBe(2);
    // every sample has been delivered once already: a verbatim copy is a replay
    const samples = l.log.map((w) => w.data);
    const mutated = fc
      .tuple(
        fc.constantFrom(...samples),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 4 }),
        fc.nat(),
      )
      .map(([s, flips, cut]) => {
        const b = Buffer.from(s);
        for (const [i, x] of flips) b[i % b.length]! ^= x;
        return cut % 5 === 0 ? b.subarray(0, cut % (b.length + 1)) : b;
      });
    const random = fc.uint8Array({ maxLength: 2000 }).map((u) => Buffer.from(u));
    const typed = fc
      .tuple(fc.integer({ min: 1, max: 4 }), fc.uint8Array({ maxLength: 200 }))
      .map(([t, r]) => Buffer.concat([Buffer.from([t, 0, 0, 0]), r]));
    const before = l.b.stats.rxDatagrams;
    let n = 0;
    fc.assert(
      fc.property(fc.oneof(mutated, random, typed), (d) => {
        n++;
        expect(() => l.b.receive(d, { key: 'mem:fuzz', send: () => true })).not.toThrow();
        expect(() => l.a.receive(Buffer.from(d), { key: 'mem:fuzz', send: () => true })).not.toThrow();
      }),
      { numRuns: 1500 },
    );
    expect(l.b.stats.rxDatagrams - before).toBe(n);
    // nothing forged or replayed was delivered, and the genuine session still works
    expect(l.gotB.length).toBe(2);
    expect(l.peerOfB.endpoint?.key).toBe('mem:a');
    l.queue.length = 0;
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'still fine'));
    l.pump();
    expect(l.gotB.at(-1)!.subarray(28).toString()).toBe('still fine');
    l.close();
  });

  it('authenticated but bogus inner packets (any length fields) are dropped, never over-read', () => {
    const l = new Link();
    l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'x'));
    l.pump();
    const kp = l.peerOfA.keypairs.current!;
    const nonce = Buffer.alloc(12);
    const aead = defaultAead();
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 1420 }), (inner) => {
        const d = sealTransport(aead, kp, inner, 1420, nonce);
        const got = l.gotB.length;
        expect(() => l.b.receive(d, l.endpointA)).not.toThrow();
        if (l.gotB.length > got) {
          const p = l.gotB.at(-1)!;
          // only a well-formed packet from the allowed source can come out, cut to its own length
          expect(p.length).toBeLessThanOrEqual(inner.length);
          expect(p[0]! >> 4).toBe(4);
          expect(p.readUInt16BE(2)).toBe(p.length);
          expect([...p.subarray(12, 16)].join('.')).toBe(A_ADDR);
        }
      }),
      { numRuns: 1000 },
    );
    expect(l.peerOfB.drops['bad-ip'] + l.peerOfB.drops['allowed-ips']).toBeGreaterThan(900);
    l.close();
  });

  it('a flood of initiations with valid mac1 but garbage crypto is dropped without state growth', () => {
    const l = new Link();
    l.peerOfA.sendHandshakeInitiation(false);
    const init = l.queue.shift()!.data;
    expect(init[0]).toBe(MSG_INITIATION);
    const macs = new CookieGenerator(l.keysB.publicKey, 120_000);
    for (let i = 0; i < 200; i++) {
      const b = Buffer.from(init);
      b[50]! ^= (i % 255) + 1; // breaks encrypted_static
      if (i % 2 === 0) macs.addMacs(b, l.clock.now()); // half of them with a valid mac1
      l.b.receive(b, { key: `mem:${i}`, send: () => true });
    }
    expect(l.b.stats.drops.mac1).toBe(100);
    expect(l.b.stats.drops.handshake).toBe(100);
    expect(l.b.stats.indices).toBe(0);
    expect(l.sentBy('b').length).toBe(0);
    l.close();
  });
});
