import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../keys.js';
import { Device, type Endpoint } from './device.js';
import { compareTai64n, TimestampGenerator, tai64n, ZERO_TAI64N } from './tai64n.js';

describe('TAI64N', () => {
  it('encodes 0x400000000000000a + seconds, big-endian, nanoseconds whitened to 2^24', () => {
    // 2026-11-21T00:00:00.5Z
    const ms = Date.UTC(2026, 10, 21) + 500;
    const t = tai64n(ms);
    expect(t.length).toBe(12);
    expect(t.readBigUInt64BE(0)).toBe(0x400000000000000an + BigInt(Math.floor(ms / 1000)));
    const ns = t.readUInt32BE(8);
    expect(ns & 0xffffff).toBe(0);
    expect(ns).toBe(500_000_000 - (500_000_000 % 0x1000000));
  });

  it('the generator is strictly increasing even within one whitener step or when the clock goes back', () => {
    const g = new TimestampGenerator();
    const base = Date.UTC(2026, 0, 1);
    let prev = g.next(base);
    for (const ms of [base, base + 1, base + 2, base - 5000, base + 16, base + 999.9]) {
      const t = g.next(ms);
      expect(compareTai64n(t, prev)).toBeGreaterThan(0);
      prev = t;
    }
  });

  it('generators and handshakes start from the shared zero timestamp and never write into it', () => {
    const g = new TimestampGenerator();
    const base = Date.UTC(2026, 0, 1);
    for (const ms of [base, base, base - 5000, base + 1]) g.next(ms);
    // Two devices handshake in process (initiation, response, keepalive): the responder replaces its
    // peer's lastTimestamp, the initiator its generator's.
    const a = generateKeyPair();
    const b = generateKeyPair();
    const devs: Device[] = [];
    /** Device i's endpoint for its peer: what it sends arrives at the other device from that one's. */
    const ends: Endpoint[] = [];
    const mk = (self: typeof a, other: typeof a, addr: string, i: number) => {
      const d = new Device({ privateKey: self.privateKey, onPacket: () => {} });
      ends[i] = {
        key: `dev:${1 - i}`,
        send: (dg) => {
          devs[1 - i]!.receive(Buffer.from(dg), ends[1 - i]!);
          return true;
        },
      };
      d.addPeer({ publicKey: other.publicKey, endpoint: ends[i], allowedIps: [addr] });
      devs.push(d);
      return d;
    };
    const da = mk(a, b, '10.0.0.2/32', 0);
    const db = mk(b, a, '10.0.0.1/32', 1);
    da.getPeer(b.publicKey)!.sendHandshakeInitiation(false);
    expect(da.getPeer(b.publicKey)!.isSessionUp).toBe(true);
    expect(db.getPeer(a.publicKey)!.isSessionUp).toBe(true);
    expect(db.getPeer(a.publicKey)!.handshake.lastTimestamp).not.toBe(ZERO_TAI64N);
    da.close();
    db.close();
    expect(ZERO_TAI64N.equals(Buffer.alloc(12))).toBe(true);
  });
});
