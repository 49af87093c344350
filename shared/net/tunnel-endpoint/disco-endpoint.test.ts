/**
 * Two tunnel endpoints that speak disco, each on a real UDP transport on loopback, with a relayed path
 * between them (an in-process relay that hands payloads across, disco ones to receiveDisco): WireGuard
 * starts over the relay, the selectors find the direct path and traffic moves to UDP; when UDP is blocked
 * (a gate on both sockets' sends) traffic carries on over the relay, and moves back once UDP returns.
 * The selectors run on short timers so the test takes seconds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_ADDRESS,
  connectAgent,
  connectNodes,
  HUB_ADDRESS,
  type LoopbackNode,
  type LoopbackNodeOptions,
  startLoopbackNode,
} from '../../../test/helpers/loopback-endpoints.js';
import { pollUntil } from '../../../test/helpers/wait.js';
import { parseIpv4Address } from '../ip/index.js';
import { buildUdpPacket } from '../ip/udp.js';
import { STREAM_PATH_TUNING } from '../tunnel-streams/constants.js';

const HUB = HUB_ADDRESS;
const AGENT = AGENT_ADDRESS;
const LO = '127.0.0.1';
const ECHO_PORT = 7;

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** Resolves with the ms it took `pred` to hold (polled every 5 ms). */
async function until(pred: () => boolean, ms: number): Promise<number> {
  return (
    await pollUntil({ what: 'the condition', read: pred, until: (ok) => ok, timeoutMs: ms, intervalMs: 5 })
  ).elapsedMs;
}

/** A node whose UDP sends pass while the gate is open; it answers every echo it gets. */
function node(
  address: string,
  role: 'client' | 'server',
  gate: { open: boolean },
  more: Pick<LoopbackNodeOptions, 'keys' | 'timers'> = {},
): Promise<LoopbackNode> {
  return startLoopbackNode({
    ...more,
    address,
    gate: (_d, send) => gate.open && send(),
    endpoint: { streams: { role } },
    closers,
    onPacket: (p, n) => {
      if (p.readUInt16BE(22) !== ECHO_PORT) return;
      n.endpoint.send(
        buildUdpPacket(
          { src: p.readUInt32BE(16), dst: p.readUInt32BE(12), srcPort: ECHO_PORT, dstPort: ECHO_PORT + 1 },
          p.subarray(28),
        ),
      );
    },
  });
}

/**
 * Application traffic (an inner UDP datagram to ECHO_PORT, which the other side answers): ICMP would not do,
 * it is what the sessions' liveness probes use and does not count as traffic for the selector's pacing.
 */
function echo(seq: number): Buffer {
  return buildUdpPacket(
    { src: parseIpv4Address(AGENT), dst: parseIpv4Address(HUB), srcPort: ECHO_PORT + 1, dstPort: ECHO_PORT },
    Buffer.from(`disco ${seq}`),
  );
}

describe('TunnelEndpoint with disco', () => {
  it('moves WireGuard to the direct path, falls back to the relay when UDP is blocked, and back', async () => {
    const gate = { open: true };
    const hub = await node(HUB, 'client', gate);
    const agent = await node(AGENT, 'server', gate);
    connectNodes(hub, agent);

    // Traffic every 20 ms from the agent; the hub answers each echo.
    let seq = 0;
    const traffic = setInterval(() => agent.endpoint.send(echo(++seq)), 20);
    closers.push(() => clearInterval(traffic));
    await until(() => agent.got > 3, 3_000);
    await until(() => agent.paths?.path?.kind === 'direct' && hub.paths?.path?.kind === 'direct', 3_000);

    // Direct now: echoes go over UDP, the relay carries only disco pings.
    const relayedBefore = agent.relayedOut;
    const udpBefore = hub.udp.stats.received;
    const gotBefore = agent.got;
    await new Promise((r) => setTimeout(r, 500));
    expect(agent.got - gotBefore).toBeGreaterThan(10);
    expect(hub.udp.stats.received - udpBefore).toBeGreaterThan(10);
    expect(agent.relayedOut - relayedBefore).toBeLessThan(5);
    expect(agent.endpoint.disco?.snapshot(hub.keys.publicKey)).toMatchObject({
      route: 'direct',
      remote: { host: LO, port: hub.udp.port },
    });
    // A stream session started now acknowledges and caps its flight by the direct path's tuning, on both sides.
    hub.endpoint.streams.open(parseIpv4Address(AGENT), 'svc:80').catch(() => {});
    const hubArq = hub.endpoint.streams.link(parseIpv4Address(AGENT))?.arq;
    const tuning = (arq: typeof hubArq) => ({ ack: arq?.ackPolicy, queueTargetMs: arq?.queueTargetMs });
    expect(tuning(hubArq)).toEqual(STREAM_PATH_TUNING.direct);
    await until(() => agent.endpoint.streams.link(parseIpv4Address(HUB)) !== undefined, 1_000);
    const agentArq = agent.endpoint.streams.link(parseIpv4Address(HUB))?.arq;
    expect(tuning(agentArq)).toEqual(STREAM_PATH_TUNING.direct);

    // UDP blocked: once the trust window (250 ms here) runs out every datagram also goes over the relay
    // (route both), so the echoes stop for about that long, not until the remote is dropped (550 ms).
    gate.open = false;
    const blockedAt = Date.now();
    const fellBack = await until(() => agent.paths?.duplicating === true, 2_000);
    expect(fellBack).toBeLessThan(450);
    await new Promise((r) => setTimeout(r, 800));
    const after = agent.gotAt.filter((t) => t >= blockedAt);
    expect(after.length).toBeGreaterThan(10);
    const gaps = after.map((t, i) => t - (i === 0 ? blockedAt : (after[i - 1] ?? t)));
    expect(Math.max(...gaps)).toBeLessThan(450);
    expect(agent.paths?.path?.kind).toBe('relayed');
    expect(tuning(agentArq)).toEqual(STREAM_PATH_TUNING.relayed);

    // UDP back: direct again.
    gate.open = true;
    await until(() => agent.paths?.path?.kind === 'direct' && agent.paths?.duplicating === false, 3_000);
    expect(tuning(agentArq)).toEqual(STREAM_PATH_TUNING.direct);
    expect(Object.values(hub.endpoint.disco?.dropped ?? {}).reduce((a, b) => a + b, 0)).toBe(0);
  });

  it('relay-only keeps a peer on the relay and sends no UDP', async () => {
    const gate = { open: true };
    const hub = await node(HUB, 'client', gate);
    const agent = await node(AGENT, 'server', gate);
    agent.endpoint.disco?.setConditions({ policy: 'relay-only' });
    connectNodes(hub, agent);
    let seq = 0;
    const traffic = setInterval(() => agent.endpoint.send(echo(++seq)), 20);
    closers.push(() => clearInterval(traffic));
    await until(() => agent.got > 20, 3_000);
    expect(agent.paths?.path?.kind).toBe('relayed');
    expect(agent.udp.stats.sent).toBe(0);
    expect(agent.endpoint.disco?.snapshot(hub.keys.publicKey)?.reason).toBe('relay-only');
  });

  it('answers a restarted peer over the relay at once, though the old direct remote was still trusted', async () => {
    // The hub idles with a long trust window; the restarted agent (same keys, new UDP port) cannot reach the
    // hub over UDP (as behind a hub NAT that takes no unsolicited UDP), so it handshakes over the relay.
    const timers = { idlePingMs: 10_000 };
    const hub = await node(HUB, 'client', { open: true }, { timers });
    const first = await node(AGENT, 'server', { open: true }, { timers });
    let agent = first;
    const { presharedKey } = connectNodes(hub, first, { agentNow: () => agent });
    for (let seq = 0; seq < 5; seq++) first.endpoint.send(echo(seq));
    await until(() => first.got >= 5 && hub.paths?.path?.kind === 'direct', 3_000);
    await new Promise((r) => setTimeout(r, 1_200)); // idle now: the hub trusts the remote for ~10 s more
    await first.endpoint.close();
    await first.udp.close();
    const blocked = { open: false };
    agent = await node(AGENT, 'server', blocked, { keys: first.keys, timers });
    connectAgent(hub, agent, presharedKey);
    expect(hub.endpoint.disco?.snapshot(agent.keys.publicKey)?.route).toBe('direct');
    agent.endpoint.send(echo(100));
    const answeredIn = await until(() => agent.got >= 1, 5_000);
    expect(answeredIn).toBeLessThan(1_000);
    expect(hub.endpoint.disco?.snapshot(agent.keys.publicKey)?.route).not.toBe('direct');
    // UDP open again: the hub's pings reach the new port and both sides go direct to each other.
    blocked.open = true;
    await until(() => hub.endpoint.disco?.snapshot(agent.keys.publicKey)?.route === 'direct', 5_000);
    expect(hub.endpoint.disco?.snapshot(agent.keys.publicKey)?.remote).toEqual({
      host: LO,
      port: agent.udp.port,
    });
  });
});
