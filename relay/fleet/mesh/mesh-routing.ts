/**
 * What the hub's proxies ask the mesh: whose request this is (meshOriginOf: a client's, or a mesh peer's with the
 * fleet key; a bad mesh header is refused whether or not this relay has a mesh), and whether a client's request
 * for a cluster goes one hop to another replica (hopFor). The agents of one cluster may be held by different
 * replicas: a request is served here while this replica holds a live agent of the cluster that does not drain,
 * else it goes one hop to a replica that holds one (the cluster's remote agents taken in turn, as the local
 * placement takes its agents: stream-placement.ts). A mesh request is always served here, so a request crosses
 * the mesh at most once. `retryHopFor` names another replica's agent for a request whose open failed here.
 *
 * An agent that is on the move (its replica drained or died, it is reconnecting through the balancer) has a
 * session nowhere for a moment: hopFor waits for it, up to `arrivalWaitMs` for the cluster (the proxy plugin gives
 * ARRIVAL_WAIT_MS while its lease is fresh, 0 otherwise), looking every ARRIVAL_POLL_MS, so the request reaches it
 * where it lands instead of failing. A local agent that drains (its next run comes back here most likely) keeps
 * the request here when no other replica holds one. Another replica's agent that drains is not a hop target (its
 * replica marks it in the store: replica-membership.ts), so a request waits for an agent that takes it rather than
 * queueing behind one that is leaving.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { registeredAgents } from '../../control/store/agent-replicas.js';
import type { AgentLocation } from '../../control/store/postgres-mesh.js';
import type { ClusterRecord } from '../../control/store/types.js';
import { type MeshOrigin, meshOrigin } from './mesh-auth.js';
import { isRefusal } from './mesh-dial.js';
import type { MeshHop } from './mesh-forward.js';
import type { MeshNode, MeshStats } from './mesh-node.js';

/** How long a request waits for an agent with a fresh lease that has a session on no replica. */
export const ARRIVAL_WAIT_MS = 5_000;
const ARRIVAL_POLL_MS = 100;
/** Clusters whose turn over remote agents is kept (past it the turns start over). */
export const MAX_HOP_TURNS = 10_000;

/** Whether this replica holds an agent of the cluster: live and not draining, only draining ones, or none. */
export type LocalAgents = 'ready' | 'draining' | 'none';

export interface MeshRouting {
  /** Null: this relay has no mesh (every request is served here). */
  node: MeshNode | null;
  stats: MeshStats;
  /** The agents of cluster `c` this process holds a live session of. */
  localAgents(c: ClusterRecord): Promise<LocalAgents>;
  /** How long a request waits for this cluster's agent to show up here or on another replica (0: not at all). */
  arrivalWaitMs(c: ClusterRecord): number;
  /** The next turn over the cluster's remote agents (MeshTurns). */
  turns: MeshTurns;
}

/** Each cluster's turn over the agents other replicas hold, so requests that hop are spread across them. */
export class MeshTurns {
  readonly #turn = new Map<string, number>();

  /** One of `locations` (non-empty), taken in turn for `cluster`. */
  pick(cluster: string, locations: readonly AgentLocation[]): AgentLocation {
    const turn = this.#turn.get(cluster) ?? 0;
    if (!this.#turn.has(cluster) && this.#turn.size >= MAX_HOP_TURNS) this.#turn.clear();
    this.#turn.set(cluster, (turn + 1) % 1_000_000);
    return locations[turn % locations.length]!;
  }
}

export function meshOriginOf(r: MeshRouting | undefined, headers: IncomingHttpHeaders): MeshOrigin {
  return meshOrigin(r?.node?.key ?? null, headers, r?.stats.auth);
}

/** The replica to forward a request for `c` to, or null to serve it here. */
export async function hopFor(
  r: MeshRouting | undefined,
  origin: MeshOrigin,
  c: ClusterRecord,
): Promise<AgentLocation | null> {
  const node = r?.node;
  if (!r || !node || origin === 'mesh' || registeredAgents(c) === 0) return null;
  const deadline = Date.now() + r.arrivalWaitMs(c);
  for (;;) {
    const local = await r.localAgents(c);
    if (local === 'ready') return null;
    const remote = await node.locate(c.name);
    if (remote.length > 0) return r.turns.pick(c.name, remote);
    if (local === 'draining' || Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, ARRIVAL_POLL_MS));
  }
}

/** Replicas found not listening that one request moves past before its dial's error is the answer. */
const MAX_REFUSED_HOPS = 2;

/**
 * The hop for a client's request for `c`, dialed; null to serve it here. The replica hopFor names may have died
 * since its last heartbeat (its agent is reconnecting through the balancer): when it refuses the connection,
 * the mesh leaves it out (MeshNode.dial) and hopFor chooses again, waiting for the agent where it lands (here,
 * too), so a request made right after a replica dies reaches the agent instead of failing MESH_UNREACHABLE.
 */
export async function reachableHop(
  r: MeshRouting | undefined,
  origin: MeshOrigin,
  c: ClusterRecord,
  req: IncomingMessage,
): Promise<MeshHop | null> {
  for (let refused = 0; ; refused++) {
    const node = r?.node;
    const location = await hopFor(r, origin, c);
    if (location === null || !node) return null;
    try {
      const peer = await node.dial(location);
      return { ...node.hopTo(location, req), dial: () => Promise.resolve(peer) };
    } catch (err) {
      if (refused >= MAX_REFUSED_HOPS || !isRefusal(err)) throw err;
    }
  }
}

/**
 * After an open failed here (the agent died or went away under it): a replica that holds another live agent of
 * the cluster, or null. Never for a mesh request (it was already forwarded once).
 */
export async function retryHopFor(
  r: MeshRouting | undefined,
  origin: MeshOrigin,
  c: ClusterRecord,
): Promise<AgentLocation | null> {
  const node = r?.node;
  if (!r || !node || origin === 'mesh') return null;
  const remote = await node.locate(c.name);
  return remote.length > 0 ? r.turns.pick(c.name, remote) : null;
}
