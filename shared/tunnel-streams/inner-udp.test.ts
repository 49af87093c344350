import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newArqStats } from '../arq/arq-options.js';
import { DatagramWriter } from '../arq/datagram-writer.js';
import { CMD_PUSH } from '../arq/segment.js';
import { encodeSendPacket } from '../derp/frames.js';
import { allocPacket, headroomOf, tailroomOf } from '../packet-room.js';
import { defaultAead } from '../wireguard/crypto/aead.js';
import { Keypair } from '../wireguard/keypair.js';
import { sealTransport } from '../wireguard/transport.js';
import { RELAYED_ARQ_MTU, RELAYED_INNER_MTU } from './constants.js';
import {
  pickStreamDatagram,
  STREAM_DATAGRAM_HEADROOM,
  STREAM_DATAGRAM_TAILROOM,
  wrapStreamDatagram,
} from './inner-udp.js';

const SRC = 0x64400001;
const overlaps = (a: Buffer, b: Buffer): boolean =>
  a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;
const DST = 0x64400002;

describe('wrapStreamDatagram', () => {
  it('property: headers written in the room are byte-identical to the copied packet', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4000 }), fc.integer({ min: 0, max: 100 }), (bytes, extra) => {
        const expected = wrapStreamDatagram(SRC, DST, Buffer.from(bytes));
        const d = allocPacket(bytes.length, 28 + extra, 9);
        d.set(bytes);
        const p = wrapStreamDatagram(SRC, DST, d);
        expect(p.equals(expected)).toBe(true);
        expect(p.buffer).toBe(d.buffer);
        expect([headroomOf(p), tailroomOf(p)]).toEqual([extra, 9]);
        const picked = pickStreamDatagram(p, DST);
        expect(typeof picked === 'object' && picked.payload.equals(Buffer.from(bytes))).toBe(true);
      }),
    );
  });

  it('copies a plain datagram and one with too little room, leaving them untouched', () => {
    const bytes = randomBytes(100);
    const expected = wrapStreamDatagram(SRC, DST, Buffer.from(bytes));
    for (const d of [Buffer.from(bytes), allocPacket(100, 27, 100).fill(bytes)]) {
      const p = wrapStreamDatagram(SRC, DST, d);
      expect(p.equals(expected)).toBe(true);
      expect(overlaps(p, d)).toBe(false);
      expect(d.equals(bytes)).toBe(true);
    }
  });
});

describe('stream datagram send path', () => {
  /** ARQ datagram -> inner IPv4/UDP -> WireGuard transport -> DERP SendPacket, as the agent sends it. */
  function sendPath(head: number, tail: number, chunks: Buffer[], counter: number): Buffer[] {
    const aead = defaultAead();
    const kp = new Keypair(Buffer.alloc(32, 3), Buffer.alloc(32), 1, 77, true, 0);
    kp.sendCounter = counter;
    const nonce = Buffer.alloc(12);
    const frames: Buffer[] = [];
    const w = new DatagramWriter(
      5,
      1,
      RELAYED_ARQ_MTU,
      (d) => {
        const inner = wrapStreamDatagram(SRC, DST, d);
        const wg = sealTransport(aead, kp, inner, RELAYED_INNER_MTU, nonce);
        const f = encodeSendPacket(Buffer.alloc(32, 9), wg);
        frames.push(f);
        if (head > 0) expect(f.buffer).toBe(d.buffer); // one allocation from the ARQ to the socket
      },
      newArqStats(),
      head,
      tail,
    );
    for (const [i, c] of chunks.entries()) w.put(CMD_PUSH, 64, 1000 + i, i, 0, c);
    w.finish();
    return frames;
  }

  it('property: with the stream room every layer writes in place and the frames equal the copying path', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 8 }),
        fc.nat(1 << 20),
        (sizes, counter) => {
          const chunks = sizes.map((n) => randomBytes(n));
          const copied = sendPath(0, 0, chunks, counter);
          const inPlace = sendPath(STREAM_DATAGRAM_HEADROOM, STREAM_DATAGRAM_TAILROOM, chunks, counter);
          expect(inPlace.length).toBe(copied.length);
          for (const [i, f] of inPlace.entries()) expect(f.equals(copied[i]!)).toBe(true);
          for (const f of inPlace) expect(f.byteOffset).toBe(0); // the headroom is exactly what the layers use
        },
      ),
      { numRuns: 25 },
    );
  });
});
