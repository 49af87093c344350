/**
 * The direct path's MTU search between two tunnel endpoints on real UDP sockets on loopback (the relayed path
 * an in-process hand-over, as in disco-endpoint.test.ts): the MTU climbs to the largest step loopback carries,
 * the stream link's segments follow it, a black hole (datagrams over 1,500 bytes silently dropped at the
 * sockets) takes it back to the base, and an echo stream carries on byte for byte across that and across
 * direct -> relayed -> direct switches of different MTUs. Short timers so the test takes seconds.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_ADDRESS,
  connectNodes,
  HUB_ADDRESS,
  type LoopbackNode,
  startLoopbackNode,
} from '../../../test/helpers/loopback-endpoints.js';
import { pollUntil } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { parseIpv4Address } from '../ip/index.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../mux/open-target.js';
import { DEFAULT_DIRECT_MTU } from './direct-path.js';
import { PMTU_IP_UDP_HEADROOM, PMTU_OUTER_STEPS, type PmtuProbesOptions } from './pmtu-probes.js';

type PmtuOptions = Pick<PmtuProbesOptions, 'timers' | 'firstHopMtu'>;
// A probe is lost after 400 ms: beside other test files on two cores an ack can take a few hundred ms, and
// three lost in a row would end the climb for raiseMs.
const PMTU = { probeTimeoutMs: 400, maxProbes: 3, confirmMs: 300, raiseMs: 60_000 };
const LOOPBACK_TOP = (PMTU_OUTER_STEPS.at(-1) ?? 0) - PMTU_IP_UDP_HEADROOM;

/** What the sockets let through: nothing when closed, and no datagram over maxSize. */
interface Gate {
  open: boolean;
  maxSize: number;
  largest: number;
}

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

/** Resolves with the ms it took `pred` to hold (polled every 5 ms). */
async function until(what: string, pred: () => boolean, ms: number): Promise<number> {
  return (await pollUntil({ what, read: pred, until: (ok) => ok, timeoutMs: ms, intervalMs: 5 })).elapsedMs;
}

function echoServer(s: MuxStream): void {
  s.on('error', () => {}); // closed with the endpoint at the end
  void readOpenRequest(s, { clock: realClock }).then(() => {
    replyOpen(s, OPEN_OK);
    s.pipe(s);
  });
}

/** A node whose UDP sends pass through `gate`; the server side echoes every stream. */
function node(
  address: string,
  role: 'client' | 'server',
  gate: Gate,
  pmtu: PmtuOptions = { timers: PMTU },
): Promise<LoopbackNode> {
  return startLoopbackNode({
    address,
    gate: (d, send) => {
      if (!gate.open || d.length > gate.maxSize) return true; // lost on the way
      gate.largest = Math.max(gate.largest, d.length);
      return send();
    },
    endpoint: {
      pmtu,
      streams: role === 'server' ? { role, onStream: echoServer } : { role },
    },
    closers,
  });
}

async function pair(gate: Gate): Promise<{ hub: LoopbackNode; agent: LoopbackNode }> {
  const hub = await node(HUB_ADDRESS, 'client', gate);
  const agent = await node(AGENT_ADDRESS, 'server', gate);
  connectNodes(hub, agent);
  return { hub, agent };
}

/** Writes random bytes through an echo stream until stopped; hashes what went out and what came back. */
function pump(s: MuxStream) {
  const out = createHash('sha256');
  const back = createHash('sha256');
  let sent = 0;
  let received = 0;
  let running = true;
  s.on('data', (d: Buffer) => {
    received += d.length;
    back.update(d);
  });
  const errors: Error[] = [];
  s.on('error', (e) => errors.push(e));
  const write = (): void => {
    while (running) {
      const chunk = randomBytes(16_384);
      out.update(chunk);
      sent += chunk.length;
      if (!s.write(chunk)) return void s.once('drain', write);
    }
  };
  write();
  return {
    errors,
    received: () => received,
    async finish(): Promise<{ sent: string; back: string }> {
      running = false;
      await until('echo drained', () => received === sent, 30_000);
      return { sent: out.digest('hex'), back: back.digest('hex') };
    },
  };
}

const directMtu = (n: LoopbackNode) => (n.paths?.get('direct')?.mtu ?? 0) as number;

describe('path MTU search on the direct path (real UDP on loopback)', () => {
  it('climbs to the largest loopback step; the stream link follows; a black hole and path switches lose no byte', async () => {
    const gate: Gate = { open: true, maxSize: 65_535, largest: 0 };
    const { hub, agent } = await pair(gate);
    const s = await hub.endpoint.streams.open(parseIpv4Address(AGENT_ADDRESS), 'echo:1');
    const p = pump(s);
    const link = () => hub.endpoint.streams.link(parseIpv4Address(AGENT_ADDRESS));

    await until('direct', () => hub.paths?.path?.kind === 'direct' && !hub.paths.duplicating, 5_000);
    await until(
      'jumbo both ways',
      () => directMtu(hub) === LOOPBACK_TOP && directMtu(agent) === LOOPBACK_TOP,
      10_000,
    );
    // The link's datagrams follow the path: inner MTU less its IPv4/UDP header.
    expect(link()?.arq.mtu).toBe(hub.endpoint.roomFor(parseIpv4Address(AGENT_ADDRESS)).mtu - 28);
    const before = p.received();
    await until('bytes move at the large MTU', () => p.received() > before + 1_000_000, 10_000);
    expect(gate.largest).toBeGreaterThan(DEFAULT_DIRECT_MTU);

    // Black hole: over 1,500 bytes vanish. Confirmation probes are lost, the MTU goes back to the base.
    gate.maxSize = 1_500;
    const dropped = await until('base after black hole', () => directMtu(hub) === DEFAULT_DIRECT_MTU, 5_000);
    expect(hub.endpoint.pmtu?.stats().blackHoles).toBeGreaterThanOrEqual(1);
    expect(dropped).toBeLessThan(4_000); // a confirmation due within 300 ms, then 3 probes lost at 400 ms
    expect(hub.paths?.path?.kind).toBe('direct');
    const atBase = p.received();
    await until('bytes move at the base', () => p.received() > atBase + 500_000, 10_000);

    // UDP gone: relayed (64 KiB); UDP back without the limit: direct at the base, then the search climbs again.
    gate.open = false;
    await until('relayed', () => hub.paths?.path?.kind === 'relayed', 5_000);
    expect(link()?.arq.mtu).toBe(65_535 - 32 - 28);
    const atRelay = p.received();
    await until('bytes move relayed', () => p.received() > atRelay + 500_000, 10_000);
    gate.maxSize = 65_535;
    gate.open = true;
    await until('direct again', () => hub.paths?.path?.kind === 'direct' && !hub.paths.duplicating, 10_000);
    await until('jumbo again', () => directMtu(hub) === LOOPBACK_TOP, 10_000);

    const r = await p.finish();
    expect(r.back).toBe(r.sent);
    expect(p.errors).toEqual([]);
    expect(link()?.closed).toBe(false);
    const disco = hub.endpoint.disco?.stats;
    expect(disco?.probeAcks).toBeGreaterThan(0);
    expect(agent.endpoint.disco?.stats.probes).toBeGreaterThan(0);
  }, 60_000);

  it('a first hop of 1,500 bytes keeps the base: no probe goes out', async () => {
    const gate: Gate = { open: true, maxSize: 65_535, largest: 0 };
    // The same wiring, but the hub's first hop says 1,500 (as a veth at 1,500 would).
    const l = await node(HUB_ADDRESS, 'client', gate, { timers: PMTU, firstHopMtu: () => 1_500 });
    const agent = await node(AGENT_ADDRESS, 'server', gate);
    connectNodes(l, agent);
    const limited = l.endpoint;
    const s = await limited.streams.open(parseIpv4Address(AGENT_ADDRESS), 'echo:1');
    const p = pump(s);
    await until('direct', () => l.paths?.path?.kind === 'direct', 5_000);
    // The agent's side climbs (its first hop is loopback); the limited side never probes.
    await until('agent jumbo', () => directMtu(agent) === LOOPBACK_TOP, 10_000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(directMtu(l)).toBe(DEFAULT_DIRECT_MTU);
    expect(limited.pmtu?.stats().probes).toBe(0);
    const r = await p.finish();
    expect(r.back).toBe(r.sent);
  }, 30_000);
});
