/**
 * The relay edge of a tunnel endpoint with its owner's intake, two real endpoints joined by in-memory relayed paths
 * (a tick later, like a network): every WireGuard datagram over the relay asks the intake's `peerOf` for its sender's
 * peer and passes the intake's handshake queue on its way to the device; a datagram whose sender the owner holds
 * (its lookup) reaches the device once the owner admits it; without an intake the sender's key finds the peer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait.js';
import { realClock } from '../../clock.js';
import { generateKeyPair, generatePresharedKey } from '../../keys.js';
import { parseIpv4Address } from '../ip/index.js';
import { MAX_PATH_MTU, type Path } from './path.js';
import type { PeerPaths } from './peer-paths.js';
import type { EndpointIntake } from './relay-intake.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';

const HUB = '100.64.0.1';
const AGENT = '100.64.0.2';

/** A relayed path that hands a copy of each datagram to `deliver` a tick later. */
class MemoryPath implements Path {
  readonly kind = 'relayed';
  readonly mtu = MAX_PATH_MTU;
  readonly headroom = 0;
  readonly tailroom = 0;
  deliver: (d: Buffer) => void = () => {};

  send(datagram: Buffer): boolean {
    const copy = Buffer.from(datagram);
    setImmediate(() => this.deliver(copy));
    return true;
  }
}

const open: TunnelEndpoint[] = [];
afterEach(() => {
  for (const e of open.splice(0)) e.close();
});

function endpoint(address: string, intake?: EndpointIntake) {
  const keys = generateKeyPair();
  const e = new TunnelEndpoint({
    privateKey: keys.privateKey,
    address: parseIpv4Address(address),
    clock: realClock,
    streams: { role: 'client' },
    intake,
    onPacket: () => {},
  });
  open.push(e);
  return { e, keys };
}

/** A hub endpoint (with `intake`) and an agent endpoint whose relayed datagrams reach the hub's receiveRelayed. */
function pair(intake?: (hub: () => TunnelEndpoint, agentPaths: () => PeerPaths) => EndpointIntake) {
  let hubPaths: PeerPaths | undefined;
  const hub = endpoint(
    HUB,
    intake?.(
      () => hub.e,
      () => hubPaths as PeerPaths,
    ),
  );
  const agent = endpoint(AGENT);
  const psk = generatePresharedKey();
  const toAgent = new MemoryPath();
  const toHub = new MemoryPath();
  const agentAtHub = hub.e.addPeer({ publicKey: agent.keys.publicKey, presharedKey: psk, address: AGENT });
  hubPaths = agentAtHub.paths;
  const hubAtAgent = agent.e.addPeer({ publicKey: hub.keys.publicKey, presharedKey: psk, address: HUB });
  agentAtHub.paths.add(toAgent);
  hubAtAgent.paths.add(toHub);
  toAgent.deliver = (d) => agent.e.receiveRelayed(hub.keys.publicKey, d);
  toHub.deliver = (d) => hub.e.receiveRelayed(agent.keys.publicKey, d);
  return { hub, agent, agentAtHub, hubAtAgent };
}

describe("a tunnel endpoint's relay edge and intake", () => {
  it("asks the intake's directory for each sender and passes its handshake queue; a held datagram goes on when admitted", async () => {
    const asked: string[] = [];
    const queued: number[] = [];
    let held: Buffer | undefined;
    const w = pair((hub, agentPaths) => ({
      peerOf: (src, d) => {
        asked.push(src.toString('base64'));
        // The first datagram waits for the owner's lookup.
        if (asked.length === 1) {
          held = Buffer.from(d);
          return undefined;
        }
        return agentPaths();
      },
      handshakes: {
        receive: (d, from) => {
          queued.push(d.readUInt32LE(0));
          hub().receive(d, from);
        },
      },
    }));
    expect(w.hubAtAgent.liveness.probe()).toBe(true);
    await waitFor(() => held !== undefined, 5_000, 'the first datagram held');
    expect(queued).toEqual([]);
    w.hub.e.admit(held as Buffer, w.agentAtHub.paths);
    await waitFor(() => w.hubAtAgent.liveness.prober.received === 1, 5_000, 'the echo answered');
    expect(new Set(asked)).toEqual(new Set([w.agent.keys.publicKey.toString('base64')]));
    // The initiation (1), then transport data (4): all through the queue.
    expect(queued[0]).toBe(1);
    expect(queued).toContain(4);
    expect(queued.length).toBe(asked.length);
  });

  it("without an intake finds the peer by the sender's key", async () => {
    const w = pair();
    w.hubAtAgent.liveness.probe();
    await waitFor(() => w.hubAtAgent.liveness.prober.received === 1, 5_000, 'the echo answered');
    w.agentAtHub.liveness.probe();
    await waitFor(() => w.agentAtHub.liveness.prober.received === 1, 5_000, 'and the other way');
  });
});
