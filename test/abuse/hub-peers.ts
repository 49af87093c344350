/**
 * For the hub data-plane abuse replays: agents that are the project's own code in this test process, admitted
 * through the real relay's API. registerAgent() creates a cluster and registers a fresh key pair to it (the reply
 * carries the whole tunnel: hub key, preshared key, addresses, DERP URL); startAgentSession() runs the agent's
 * real WireGuard session over the relay (tunnel-client/session/agent-session.ts) with that tunnel, so a test can
 * then do what a hostile agent would with the session's own stream link and mux.
 */
import { generateKeyPair, type KeyPair } from '../../shared/keys.js';
import type { MuxStream } from '../../shared/net/mux/mux-stream.js';
import type { Tunnel } from '../../tunnel-client/agent/types.js';
import { AgentSession } from '../../tunnel-client/session/agent-session.js';
import { api, createCluster, type ServedRelay } from './relay-fixture.js';

export interface RegisteredAgent {
  cluster: string;
  keys: KeyPair;
  tunnel: Tunnel;
}

/** Creates cluster `name` and registers a fresh key pair to it (Accepted at once with the cluster's PSK). */
export async function registerAgent(relay: ServedRelay, name: string): Promise<RegisteredAgent> {
  const psk = await createCluster(relay, name);
  const keys = generateKeyPair();
  const r = await api(relay.ready.url, 'POST', '/api/v1/register', {
    token: psk,
    body: { cluster: name, publicKey: keys.publicKey.toString('base64'), agentVersion: 'abuse-test' },
  });
  if (r.status !== 201 || !r.body.tunnel) throw new Error(`register ${name}: ${r.status} ${r.text}`);
  return { cluster: name, keys, tunnel: r.body.tunnel };
}

/** The agent's WireGuard session over the relay only (no UDP), up; `onStream` answers the hub's streams. */
export async function startAgentSession(
  relay: ServedRelay,
  agent: RegisteredAgent,
  onStream: (s: MuxStream) => void,
): Promise<AgentSession> {
  const session = new AgentSession({
    privateKey: agent.keys.privateKey,
    tunnel: agent.tunnel,
    caPin: relay.ready.caPin,
    egress: '443-only',
    onStream,
  });
  try {
    await session.whenUp(20_000);
  } catch (err) {
    await session.close();
    throw err;
  }
  return session;
}
