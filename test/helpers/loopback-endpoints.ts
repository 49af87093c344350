/**
 * Two tunnel endpoints that speak disco, each on a real UDP transport on loopback, with a relayed path between
 * them (an in-process relay that hands each payload over on the next turn, disco ones to receiveDisco): the set-up
 * of the direct-path tests in shared/tunnel-endpoint. Every UDP send goes through the test's gate; the selectors
 * run on short timers (FAST_PATH_TIMERS) so a test takes seconds.
 */
import { realClock } from '../../shared/clock.js';
import { generateKeyPair, generatePresharedKey, type KeyPair } from '../../shared/keys.js';
import { isDiscoMessage } from '../../shared/net/disco/disco-codec.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import type { Path } from '../../shared/net/tunnel-endpoint/path.js';
import type { PathTimers } from '../../shared/net/tunnel-endpoint/path-timers.js';
import type { PeerPaths } from '../../shared/net/tunnel-endpoint/peer-paths.js';
import {
  TunnelEndpoint,
  type TunnelEndpointOptions,
} from '../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import { UdpTransport } from '../../shared/net/tunnel-endpoint/udp-transport.js';

export const HUB_ADDRESS = '100.64.0.1';
export const AGENT_ADDRESS = '100.64.0.2';
const LO = '127.0.0.1';

/** A tenth of the defaults: trust 250 ms, pings every 100 ms under traffic. */
export const FAST_PATH_TIMERS: Partial<PathTimers> = {
  activeMs: 1_000,
  directPingMs: 100,
  candidatePingMs: 200,
  backgroundPingMs: 3_000,
  idlePingMs: 2_500,
  trustMs: 250,
  pingTimeoutMs: 300,
  confirmMs: 500,
  relayPingMs: 500,
  stableMs: 3_000,
  holdDownMaxMs: 800,
};

export interface LoopbackNode {
  keys: KeyPair;
  endpoint: TunnelEndpoint;
  udp: UdpTransport;
  /** Set by `connectNodes`. */
  paths?: PeerPaths;
  /** Payloads this node sent over the relayed path. */
  relayedOut: number;
  /** Inner packets the endpoint handed up, and when each arrived (Date.now()). */
  got: number;
  gotAt: number[];
}

export interface LoopbackNodeOptions {
  address: string;
  /** Every UDP send goes through here: `send` sends `datagram`; the result is the transport's answer. */
  gate: (datagram: Buffer, send: () => boolean) => boolean;
  /** The endpoint's options other than its key, address, clock, UDP and disco timers. */
  endpoint: Omit<TunnelEndpointOptions, 'privateKey' | 'address' | 'clock' | 'udp' | 'disco' | 'onPacket'>;
  /** Inner packets the endpoint hands up, with the node that got them. */
  onPacket?: (packet: Buffer, node: LoopbackNode) => void;
  /** Where the node's closers go (the test runs them after each test, newest first). */
  closers: Array<() => unknown>;
  /** The node's WireGuard keys (a restarted process keeps its own); default new ones. */
  keys?: KeyPair;
  /** Path timers over FAST_PATH_TIMERS. */
  timers?: Partial<PathTimers>;
}

export async function startLoopbackNode(o: LoopbackNodeOptions): Promise<LoopbackNode> {
  const keys = o.keys ?? generateKeyPair();
  const udp = await UdpTransport.open({ host: LO, port: 0 });
  o.closers.push(() => udp.close());
  const gated = {
    send: (d: Buffer, host: string, port: number) => o.gate(d, () => udp.send(d, host, port)),
    dontFragment: udp.dontFragment,
  };
  const endpoint = new TunnelEndpoint({
    ...o.endpoint,
    privateKey: keys.privateKey,
    address: parseIpv4Address(o.address),
    clock: realClock,
    udp: gated,
    disco: { timers: { ...FAST_PATH_TIMERS, ...o.timers } },
    onPacket: (p) => {
      node.got++;
      node.gotAt.push(Date.now());
      o.onPacket?.(p, node);
    },
  });
  const node: LoopbackNode = { keys, udp, endpoint, relayedOut: 0, got: 0, gotAt: [] };
  o.closers.push(() => endpoint.close());
  udp.listen({
    onWireGuard: (d, from) => endpoint.receiveFrom(d, from),
    onDisco: (d, from) => endpoint.receiveDisco(d, { via: 'udp', address: from.address, port: from.port }),
  });
  return node;
}

/** The relayed path from `from` to `to`: the relay hands each payload over on the next turn. */
export function relayedPath(from: LoopbackNode, to: () => LoopbackNode): Path {
  return {
    kind: 'relayed',
    mtu: 65_535,
    headroom: 0,
    tailroom: 0,
    send: (d) => {
      from.relayedOut++;
      const copy = Buffer.from(d);
      setImmediate(() => {
        const peer = to();
        if (isDiscoMessage(copy))
          peer.endpoint.receiveDisco(copy, { via: 'relay', key: from.keys.publicKey });
        else if (peer.paths) peer.endpoint.receive(copy, peer.paths);
      });
      return true;
    },
  };
}

/**
 * Adds each node as the other's disco peer over the relayed path, and gives each its loopback candidate. The
 * hub's relay hands its payloads to `agentNow()` (default: `agent`): a test that restarts the agent points it
 * at the new node and connects that one with connectAgent. Loopback candidates named in a call-me-maybe are never
 * probed (shared/net/disco/candidate-address.ts), so, as a real agent is told the hub's UDP endpoint, the agent has
 * the hub's as a configured address; the hub learns the agent's from its pings (loopback sources are allowed).
 */
export function connectNodes(
  hub: LoopbackNode,
  agent: LoopbackNode,
  opts: { agentNow?: () => LoopbackNode } = {},
): { presharedKey: Buffer } {
  const presharedKey = generatePresharedKey();
  hub.paths = hub.endpoint.addPeer({
    presharedKey,
    disco: true,
    publicKey: agent.keys.publicKey,
    address: AGENT_ADDRESS,
    paths: [relayedPath(hub, opts.agentNow ?? (() => agent))],
  }).paths;
  hub.endpoint.disco?.setLocalCandidates([{ host: LO, port: hub.udp.port }]);
  connectAgent(hub, agent, presharedKey);
  return { presharedKey };
}

/** The agent's side of connectNodes: the hub as its disco peer over the relayed path, and its candidate. */
export function connectAgent(hub: LoopbackNode, agent: LoopbackNode, presharedKey: Buffer): void {
  // Candidates first, as a restarted agent that already knows them: its first call-me-maybe lists them.
  agent.endpoint.disco?.setLocalCandidates([{ host: LO, port: agent.udp.port }]);
  agent.paths = agent.endpoint.addPeer({
    presharedKey,
    disco: true,
    publicKey: hub.keys.publicKey,
    address: HUB_ADDRESS,
    paths: [relayedPath(agent, () => hub)],
  }).paths;
  agent.endpoint.disco?.setConfigured(hub.keys.publicKey, [{ host: LO, port: hub.udp.port }]);
}
