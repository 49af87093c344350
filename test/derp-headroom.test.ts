/**
 * The DERP send paths with room before the payload (shared/net/buffers/packet-room.ts), over a real TLS WebSocket relay:
 * the WebSocket client writes its SendPacket header in place, and an in-process client (the hub) hands the
 * relay a SendPacket frame built in place that the relay rewrites into the receiver's RecvPacket. Payloads
 * must arrive byte for byte exactly as from plain buffers, in both directions, for every size.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../shared/keys.js';
import { allocPacket, headroomOf } from '../shared/net/buffers/packet-room.js';
import { SEND_PACKET_HEADROOM } from '../shared/net/derp/frames.js';
import { startClient, startRelay, type TestClient, type TestRelay } from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  await relay?.close();
  relay = undefined;
});

const SIZES = [0, 1, 15, 1400, 16 * 1024, 65_535];

/** `plain` with an own buffer granted room before it (and some after). */
function roomy(plain: Buffer, extra = 0): Buffer {
  const p = allocPacket(plain.length, SEND_PACKET_HEADROOM + extra, 16);
  plain.copy(p);
  return p;
}

function payload(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

describe('DERP with packet room', () => {
  it('a WebSocket client sends granted payloads in place; they arrive like plain ones', async () => {
    relay = await startRelay();
    const a = startClient(relay);
    const b = startClient(relay);
    clients.push(a, b);
    await Promise.all([a.client.whenConnected(5000), b.client.whenConnected(5000)]);
    const plains = SIZES.map((n, i) => payload(n, i));
    for (const [i, p] of plains.entries()) {
      const r = roomy(p, i);
      expect(a.client.send(b.keyPair.publicKey, r)).toBe(true);
      expect(headroomOf(r)).toBe(0); // the room went into the frame
      expect(a.client.send(b.keyPair.publicKey, p)).toBe(true);
    }
    await waitFor(() => b.received.length === 2 * plains.length, 5000, 'packets');
    const got = b.received.map((r) => r.payload.toString('hex'));
    expect(got).toEqual(plains.flatMap((p) => [p.toString('hex'), p.toString('hex')]));
    for (const r of b.received) expect(r.src.equals(a.keyPair.publicKey)).toBe(true);
  });

  it('an in-process client hands granted payloads over as frames; the WebSocket peer gets them intact', async () => {
    relay = await startRelay();
    const hubKey = generateKeyPair();
    const fromAgent: Buffer[] = [];
    const local = relay.derp.connectLocal(hubKey, { onPacket: (_s, p) => fromAgent.push(Buffer.from(p)) });
    const agent = startClient(relay);
    clients.push(agent);
    await agent.client.whenConnected(5000);
    const plains = SIZES.map((n, i) => payload(n, 100 + i));
    for (const p of plains) {
      const r = roomy(p);
      expect(local.send(agent.keyPair.publicKey, r)).toBe(true);
      expect(headroomOf(r)).toBe(0);
      expect(local.send(agent.keyPair.publicKey, p)).toBe(true);
    }
    await waitFor(() => agent.received.length === 2 * plains.length, 5000, 'packets to the agent');
    expect(agent.received.map((r) => r.payload.toString('hex'))).toEqual(
      plains.flatMap((p) => [p.toString('hex'), p.toString('hex')]),
    );
    for (const r of agent.received) expect(r.src.equals(hubKey.publicKey)).toBe(true);
    // The relay's onPacket hook saw the right destination for frames built in place.
    const toAgent = relay.routed.filter((r) => r.src.equals(hubKey.publicKey));
    expect(toAgent).toHaveLength(2 * plains.length);
    for (const r of toAgent) expect(r.dst.equals(agent.keyPair.publicKey)).toBe(true);
    // And the other direction still reaches the in-process client.
    const back = roomy(payload(3000, 7));
    expect(agent.client.send(hubKey.publicKey, back)).toBe(true);
    await waitFor(() => fromAgent.length === 1, 5000, 'packet to the hub');
    expect(fromAgent[0]!.equals(payload(3000, 7))).toBe(true);
    local.close();
  });

  it('an in-process client sending to another in-process client delivers the payload view', async () => {
    relay = await startRelay();
    const a = generateKeyPair();
    const b = generateKeyPair();
    const got: Buffer[] = [];
    const la = relay.derp.connectLocal(a, {});
    const lb = relay.derp.connectLocal(b, { onPacket: (s, p) => got.push(Buffer.concat([s, p])) });
    const p = payload(500, 3);
    expect(la.send(b.publicKey, roomy(p))).toBe(true);
    expect(got).toHaveLength(1);
    expect(got[0]!.equals(Buffer.concat([a.publicKey, p]))).toBe(true);
    la.close();
    lb.close();
  });
});
