/**
 * The hub topology the relay exists for: many agents over TLS WebSockets, one in-process hub node. Every
 * packet reaches its destination unchanged, the policy keeps agents from reaching each other, and the hub
 * hears PeerGone for each agent that leaves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../shared/keys.js';
import { PeerGoneReason } from '../shared/net/derp/frames.js';
import { startClient, startRelay, type TestClient, type TestRelay } from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  await relay?.close();
  relay = undefined;
});

describe('DERP relay with a hub and many agents', () => {
  it('routes agent <-> hub only, for 60 agents at once, and tells the hub who left', async () => {
    const hub = generateKeyPair();
    const isHub = (k: Buffer) => k.equals(hub.publicKey);
    relay = await startRelay({ allow: (s, d) => isHub(s) !== isHub(d) }); // agent <-> hub, never agent <-> agent
    const atHub = new Map<string, string[]>();
    const gone: string[] = [];
    const local = relay.derp.connectLocal(hub, {
      onPacket: (src, p) => {
        const k = src.toString('base64');
        atHub.set(k, [...(atHub.get(k) ?? []), p.toString()]);
      },
      onPeerGone: (peer, reason) => {
        if (reason === PeerGoneReason.Disconnected) gone.push(peer.toString('base64'));
      },
    });
    const agents = Array.from({ length: 60 }, () => startClient(relay!));
    clients.push(...agents);
    await Promise.all(agents.map((a) => a.client.whenConnected(20_000)));
    expect(relay.derp.stats.clients).toBe(61);

    for (const [i, a] of agents.entries()) {
      for (let n = 0; n < 10; n++) a.client.send(hub.publicKey, Buffer.from(`agent${i}-${n}`));
      a.client.send(agents[(i + 1) % agents.length]!.keyPair.publicKey, Buffer.from('sideways'));
    }
    await waitFor(
      () => [...atHub.values()].reduce((n, v) => n + v.length, 0) === 600,
      20_000,
      'agent packets',
    );
    for (const [i, a] of agents.entries()) {
      expect(atHub.get(a.keyPair.publicKey.toString('base64'))).toEqual(
        Array.from({ length: 10 }, (_, n) => `agent${i}-${n}`),
      );
      expect(local.send(a.keyPair.publicKey, Buffer.from(`hub->${i}`))).toBe(true);
    }
    await waitFor(() => agents.every((a) => a.received.length === 1), 20_000, 'hub replies');
    for (const [i, a] of agents.entries()) {
      expect(a.received[0]!.payload.toString()).toBe(`hub->${i}`);
      expect(a.received[0]!.src.equals(hub.publicKey)).toBe(true);
    }
    expect(relay.derp.stats.dropped.policy).toBe(60);

    const leaving = agents.slice(0, 20);
    for (const a of leaving) a.client.close();
    await waitFor(() => gone.length === 20, 10_000, 'peer gone at the hub');
    expect(new Set(gone)).toEqual(new Set(leaving.map((a) => a.keyPair.publicKey.toString('base64'))));
    expect(relay.derp.stats.clients).toBe(41);
  });
});
