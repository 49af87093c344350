/**
 * ICMP echo and per-peer liveness at the tunnel endpoint, two real endpoints joined by in-memory paths that deliver
 * on a later tick: a peer's echo request is answered by the endpoint (its owner told first, its onPacket never), the
 * reply to the endpoint's own probe is taken by that peer's liveness (RTT, the owner told), and a probe nobody
 * answers makes the peer retrying after probeMs and stale after deadMs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { generateKeyPair, generatePresharedKey } from '../../keys.js';
import { parseIpv4Address } from '../ip/index.js';
import type { EchoEvent } from './echo-answer.js';
import { MAX_PATH_MTU, type Path } from './path.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';
const PACE = { probeMs: 100, idleProbeMs: 1_000, deadMs: 300 };

/** A relayed path that hands a copy of each datagram to `deliver` a tick later, while up. */
class MemoryPath implements Path {
  readonly kind = 'relayed';
  readonly mtu = MAX_PATH_MTU;
  readonly headroom = 0;
  readonly tailroom = 0;
  up = true;
  deliver: (d: Buffer) => void = () => {};

  send(datagram: Buffer): boolean {
    if (!this.up) return false;
    const copy = Buffer.from(datagram);
    setImmediate(() => this.deliver(copy));
    return true;
  }
}

const open: TunnelEndpoint[] = [];
afterEach(() => {
  for (const e of open.splice(0)) e.close();
});

/** An endpoint that records its echo events and other packets. */
function endpoint(address: string) {
  const keys = generateKeyPair();
  const echoes: EchoEvent['kind'][] = [];
  const packets: Buffer[] = [];
  const e = new TunnelEndpoint({
    privateKey: keys.privateKey,
    address: parseIpv4Address(address),
    clock: realClock,
    streams: { role: 'client' },
    liveness: PACE,
    onEcho: (event) => void echoes.push(event.kind),
    onPacket: (p) => void packets.push(Buffer.from(p)),
  });
  open.push(e);
  return { e, keys, echoes, packets };
}

function pair() {
  const hub = endpoint(HUB);
  const agent = endpoint(AGENT);
  const psk = generatePresharedKey();
  const toAgent = new MemoryPath();
  const toHub = new MemoryPath();
  const agentAtHub = hub.e.addPeer({ publicKey: agent.keys.publicKey, presharedKey: psk, address: AGENT });
  const hubAtAgent = agent.e.addPeer({ publicKey: hub.keys.publicKey, presharedKey: psk, address: HUB });
  agentAtHub.paths.add(toAgent);
  hubAtAgent.paths.add(toHub);
  toAgent.deliver = (d) => agent.e.receive(d, hubAtAgent.paths);
  toHub.deliver = (d) => hub.e.receive(d, agentAtHub.paths);
  return { hub, agent, toAgent, agentAtHub, hubAtAgent };
}

describe('ICMP echo and per-peer liveness at the endpoint', () => {
  it("answers a peer's echo, and its own probe's reply reaches that peer's liveness", async () => {
    const w = pair();
    const liveness = w.agentAtHub.liveness;
    expect(liveness.stale).toBe(true);
    expect(liveness.probe()).toBe(true);
    await waitFor(() => liveness.prober.received === 1, 5_000, 'the reply to the probe');
    expect(liveness.stale).toBe(false);
    expect(liveness.retrying).toBe(false);
    expect(liveness.prober.rttMs).not.toBeNull();
    expect(w.agent.echoes).toEqual(['request']);
    expect(w.hub.echoes).toEqual(['answered']);
    expect(w.agent.packets).toEqual([]);
    expect(w.hub.packets).toEqual([]);
  });

  it('a probe nobody answers: due again and retrying after probeMs, stale after deadMs', async () => {
    const w = pair();
    const liveness = w.hubAtAgent.liveness;
    liveness.probe();
    await waitFor(() => !liveness.stale, 5_000, 'the first answer');
    w.toAgent.up = false;
    liveness.probe();
    expect(liveness.due(true)).toBe(false);
    await waitFor(() => liveness.retrying, 2_000, 'retrying');
    expect(liveness.due(false)).toBe(true);
    expect(liveness.stale).toBe(false);
    await waitFor(() => liveness.stale, 2_000, 'stale');
    w.toAgent.up = true;
    liveness.probe();
    await waitFor(() => !liveness.stale, 5_000, 'answered again');
  });
});
