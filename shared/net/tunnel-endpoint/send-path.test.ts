/**
 * The send path below the stream session, as a tunnel endpoint composes it for a relayed peer: ARQ
 * datagram -> inner IPv4/UDP -> WireGuard transport -> DERP SendPacket. With the room the layers declare
 * (streamDatagramRoom over transportRoom over the relayed path), every layer writes in place in the one
 * buffer the ARQ allocated, and the frames are byte-identical to the copying path's.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newArqStats } from '../arq/arq-options.js';
import { DatagramWriter } from '../arq/datagram-writer.js';
import { CMD_PUSH } from '../arq/segment.js';
import { encodeSendPacket, MAX_PACKET_LEN, SEND_PACKET_HEADROOM } from '../derp/frames.js';
import { streamDatagramRoom, wrapStreamDatagram } from '../tunnel-streams/inner-udp.js';
import { defaultAead } from '../wireguard/crypto/aead.js';
import { Keypair } from '../wireguard/keypair.js';
import { sealTransport, transportRoom } from '../wireguard/transport.js';
import { RelayedPath } from './relayed-path.js';

const SRC = 0x64400001;
const DST = 0x64400002;
const PEER_KEY = Buffer.alloc(32, 9);

/** The frames a relayed path hands its relay client for `chunks`, with or without the declared room. */
function sendPath(inPlace: boolean, chunks: Buffer[], counter: number): Buffer[] {
  const frames: Buffer[] = [];
  const path = new RelayedPath(
    {
      send: (dst, payload) => {
        frames.push(encodeSendPacket(dst, payload));
        return true;
      },
    },
    PEER_KEY,
  );
  const inner = transportRoom(path);
  const room = streamDatagramRoom(inner);
  const aead = defaultAead();
  const kp = new Keypair(Buffer.alloc(32, 3), Buffer.alloc(32), 1, 77, true, 0);
  kp.sendCounter = counter;
  const nonce = Buffer.alloc(12);
  const w = new DatagramWriter({
    conv: 5,
    incarnation: 1,
    mtu: room.mtu,
    output: (d) => {
      const wg = sealTransport(aead, kp, wrapStreamDatagram(SRC, DST, d), inner.mtu, nonce);
      expect(path.send(wg)).toBe(true);
      const f = frames.at(-1)!;
      if (inPlace) expect(f.buffer).toBe(d.buffer); // one allocation from the ARQ to the socket
    },
    stats: newArqStats(),
    headroom: inPlace ? room.headroom : 0,
    tailroom: inPlace ? room.tailroom : 0,
  });
  const fields = { cmd: CMD_PUSH, wnd: 64, ts: 0, sn: 0, una: 0, fragOffset: -1, fragTotal: 0 };
  for (const [i, c] of chunks.entries()) w.put({ ...fields, ts: 1000 + i, sn: i }, c);
  w.finish();
  return frames;
}

describe('relayed send path', () => {
  it('declares the relay frame, WireGuard and inner UDP sizes, layer by layer', () => {
    const path = new RelayedPath({ send: () => true }, PEER_KEY);
    expect([path.mtu, path.headroom, path.tailroom]).toEqual([MAX_PACKET_LEN, SEND_PACKET_HEADROOM, 0]);
    expect(transportRoom(path)).toEqual({ mtu: 65_503, headroom: 37 + 16, tailroom: 15 + 16 });
    expect(streamDatagramRoom(transportRoom(path))).toEqual({ mtu: 65_475, headroom: 81, tailroom: 31 });
  });

  it('property: with the declared room every layer writes in place and the frames equal the copying path', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 8 }),
        fc.nat(1 << 20),
        (sizes, counter) => {
          const chunks = sizes.map((n) => randomBytes(n));
          const copied = sendPath(false, chunks, counter);
          const inPlace = sendPath(true, chunks, counter);
          expect(inPlace.length).toBe(copied.length);
          for (const [i, f] of inPlace.entries()) expect(f.equals(copied[i]!)).toBe(true);
          for (const f of inPlace) expect(f.byteOffset).toBe(0); // the headroom is exactly what the layers use
        },
      ),
      { numRuns: 25 },
    );
  });
});
