/** PacketIntake on its own: a FakeClock, a hand-driven defer and a recording `deliver`. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair } from '../../../shared/keys.js';
import { PeerPaths } from '../../../shared/net/tunnel-endpoint/peer-paths.js';
import { HANDSHAKE_VIEW_MAX_BACKING, isHandshakeMessage, PacketIntake } from './packet-intake.js';

function rig(opts: { batch?: number; cap?: number; staleAfterMs?: number } = {}) {
  const clock = new FakeClock();
  const turns: Array<() => void> = [];
  const got: Array<{ d: Buffer; e: PeerPaths; at: number }> = [];
  const stale = { ms: opts.staleAfterMs ?? 5_000 };
  const intake = new PacketIntake({
    clock,
    deliver: (d, e) => got.push({ d, e, at: clock.now() }),
    staleAfterMs: () => stale.ms,
    defer: (fn) => void turns.push(fn),
    ...(opts.batch !== undefined ? { batch: opts.batch } : {}),
    ...(opts.cap !== undefined ? { cap: opts.cap } : {}),
  });
  const step = (): boolean => {
    const fn = turns.shift();
    fn?.();
    return fn !== undefined;
  };
  return { clock, intake, got, stale, step };
}

/** A datagram whose first word (LE) is `type`, then `n` bytes of `fill`. */
function msg(type: number, n = 28, fill = 0): Buffer {
  const b = Buffer.alloc(4 + n, fill);
  b.writeUInt32LE(type, 0);
  return b;
}

const e = new PeerPaths({
  publicKey: generateKeyPair().publicKey,
  address: 0x64400002,
  onPathChange: () => {},
  onAuthenticated: () => {},
});

describe('isHandshakeMessage', () => {
  it('is true exactly for types 1-3 in the little-endian first word', () => {
    expect([0, 1, 2, 3, 4, 5, 0x0100, 0x01000001].filter((t) => isHandshakeMessage(msg(t)))).toEqual([
      1, 2, 3,
    ]);
    expect(isHandshakeMessage(Buffer.from([1, 0, 0]))).toBe(false);
    expect(isHandshakeMessage(Buffer.alloc(0))).toBe(false);
  });
});

describe('PacketIntake', () => {
  it('every datagram is delivered once, unchanged: transport data at once, handshakes after a turn', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 30 }), (raw) => {
        const r = rig();
        const datagrams = raw.map((u) => Buffer.from(u));
        const now: Buffer[] = [];
        for (const d of datagrams) {
          const before = r.got.length;
          r.intake.receive(d, e);
          if (r.got.length > before) now.push(d);
        }
        expect(now).toEqual(datagrams.filter((d) => !isHandshakeMessage(d)));
        expect(r.intake.depth).toBe(datagrams.length - now.length);
        while (r.step());
        expect(r.got.length).toBe(datagrams.length);
        expect(r.got.slice(now.length).map((g) => g.d)).toEqual(datagrams.filter(isHandshakeMessage));
        expect(r.got.every((g) => g.e === e)).toBe(true);
      }),
    );
  });

  it('handles at most `batch` handshakes per turn, in order, and counts what the full queue refuses', () => {
    const r = rig({ batch: 3, cap: 7 });
    for (let i = 0; i < 10; i++) r.intake.receive(msg(1, 28, i), e);
    expect(r.intake.depth).toBe(7);
    expect(r.intake.dropped.handshakeQueueFull).toBe(3);
    const perTurn: number[] = [];
    while (r.step()) perTurn.push(r.got.length);
    expect(perTurn).toEqual([3, 6, 7]);
    expect(r.got.map((g) => g.d[4])).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('drops a handshake that waited staleAfterMs (read when it is handled) and delivers a younger one', () => {
    const r = rig({ batch: 1, staleAfterMs: 5_000 });
    r.intake.receive(msg(1, 28, 1), e);
    r.clock.advance(3_000);
    r.intake.receive(msg(1, 28, 2), e);
    r.clock.advance(2_000);
    r.step();
    expect(r.intake.dropped.handshakeStale).toBe(1);
    expect(r.got).toEqual([]);
    r.stale.ms = 2_000;
    r.step();
    expect(r.intake.dropped.handshakeStale).toBe(2);
    r.stale.ms = 10_000;
    r.intake.receive(msg(2, 28, 3), e);
    r.clock.advance(9_999);
    r.step();
    expect(r.got.map((g) => g.d[4])).toEqual([3]);
  });

  it('keeps a view into a small buffer, copies a view into a large one', () => {
    const r = rig();
    const small = Buffer.alloc(HANDSHAKE_VIEW_MAX_BACKING);
    const large = Buffer.alloc(HANDSHAKE_VIEW_MAX_BACKING + 1);
    // Buffer.alloc of a small size may share a pool; a view of its own ArrayBuffer keeps the test exact.
    const smallView = Buffer.from(small.buffer, small.byteOffset, 148);
    const largeView = Buffer.from(large.buffer, large.byteOffset + 100, 148);
    smallView.writeUInt32LE(1, 0);
    largeView.writeUInt32LE(1, 0);
    largeView[10] = 0x42;
    r.intake.receive(smallView, e);
    r.intake.receive(largeView, e);
    large.fill(0xee);
    while (r.step());
    expect(r.got[0]?.d).toBe(smallView);
    expect(r.got[1]?.d).not.toBe(largeView);
    expect(r.got[1]?.d.readUInt32LE(0)).toBe(1);
    expect(r.got[1]?.d[10]).toBe(0x42);
    expect(r.got[1]?.d.buffer.byteLength).toBeLessThanOrEqual(HANDSHAKE_VIEW_MAX_BACKING);
  });

  it('close drops waiting handshakes and refuses later ones; transport data still passes', () => {
    const r = rig();
    r.intake.receive(msg(1), e);
    r.intake.close();
    expect(r.intake.depth).toBe(0);
    r.intake.receive(msg(1), e);
    expect(r.intake.dropped.handshakeQueueFull).toBe(1);
    r.intake.receive(msg(4), e);
    while (r.step());
    expect(r.got.map((g) => g.d.readUInt32LE(0))).toEqual([4]);
  });
});
