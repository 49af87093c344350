/**
 * The hub's side of the streams: `open(cluster, target)` on the hub endpoint's stream binding (mux role
 * 'client', from the hub address 100.64.0.1), which the proxies call. It resolves the cluster,
 * fails fast when no agent session is live, and maps refusals to stable codes:
 *   NOT_FOUND (no such cluster), AGENT_NOT_CONNECTED (no agent, or its session is down),
 *   STREAM_REFUSED / UPSTREAM_FAILED / BAD_INPUT (the agent's answer), TIMEOUT (no answer in time).
 * A link whose agent has had no relay connection for `disconnectGraceMs` is closed (its streams
 * error at once instead of waiting for the mux keepalive), and so is a link whose cluster is deleted,
 * denied or unjoined. While another agent of the cluster is live (here or on another replica of a fleet), the
 * grace is not waited: the link closes at the next look (within WATCH_INTERVAL_MS of the relay connection
 * closing), so a request in flight on a killed agent fails in about a second instead of hanging.
 * A new run of an agent's process (the hub node's `onAgentRun`, relay/data/hub/agent-runs.ts) replaces its stream
 * session at once (`replaceSession`): no new stream goes to the previous run's session. A session that still
 * closes under an open (the peer's GoAway, or its restart noticed first by the ARQ) is dropped and the open
 * retried once on a fresh session.
 * An agent that drains (its GoAway with the normal code: SIGTERM) gets no new stream: opens for it wait for its next
 * run up to AGENT_RESTART_WAIT_MS (agent-drains.ts), then go to the new run, or fail AGENT_NOT_CONNECTED. The drain
 * and its end are emitted ('agent-draining'), so a fleet's other replicas send it no request meanwhile.
 */

import type { Clock, TimerHandle } from '../../../shared/clock.js';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import { GOAWAY_NORMAL } from '../../../shared/net/mux/frame.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import type { StreamBinding } from '../../../shared/net/tunnel-streams/stream-binding.js';
import type { StreamLink } from '../../../shared/net/tunnel-streams/stream-link.js';
import type { RelayContext } from '../../context/context.js';
import type { KeyEvent } from '../../control/model/relay-events.js';
import { AgentDrains } from './agent-drains.js';
import { lastSeenText } from './last-seen.js';
import { type PlacementView, StreamPlacement } from './stream-placement.js';

export const DEFAULT_DISCONNECT_GRACE_MS = 8_000;
const WATCH_INTERVAL_MS = 1_000;

/** What HubStreams needs from the data plane (hub node and DERP server). */
export interface HubStreamsDataPlane {
  /** The hub endpoint's stream binding (it owns and closes it). */
  readonly binding: StreamBinding;
  /** Live session for this agent key (handshake done, recent datagrams). */
  isSessionUp(publicKey: string): boolean;
  /** The agent's relay connection is up. */
  isRelayConnected(publicKey: string): boolean;
  /** Another agent of the cluster than `publicKey` has a live session, here or on another replica (default: none). */
  hasOtherLiveAgent?(cluster: string, publicKey: string): boolean;
}

export interface HubStreamsOptions {
  ctx: Pick<RelayContext, 'store' | 'hooks'>;
  clock: Clock;
  dataPlane: HubStreamsDataPlane;
  openTimeoutMs?: number;
  disconnectGraceMs?: number;
  /** How long an open for a draining agent waits for its next run (default AGENT_RESTART_WAIT_MS). */
  restartWaitMs?: number;
  /** Draining agents tracked at most (default 1,024, the stream binding's default link cap). */
  maxDrains?: number;
}

interface Peer {
  cluster: string;
  publicKey: string;
  downSince: number | null;
}

interface AgentTarget {
  publicKey: string;
  address: string;
  leaseRenewAt: number | null;
}

function targetOf(publicKey: string, address: string, leaseRenewAt: number | null): AgentTarget {
  return { publicKey, address, leaseRenewAt };
}

/** An open that another agent of the cluster may take: the session closed, timed out or is not up. */
export function retryable(err: unknown): boolean {
  return (
    isTunnelError(err, 'CLOSED') ||
    isTunnelError(err, 'TIMEOUT') ||
    isTunnelError(err, 'AGENT_NOT_CONNECTED') ||
    isTunnelError(err, 'STREAM_RESET')
  );
}

export class HubStreams {
  readonly binding: StreamBinding;
  readonly #options: HubStreamsOptions;
  readonly #peers = new Map<number, Peer>();
  readonly #onRevoked = (e: KeyEvent): void => this.#dropAgent(e);
  readonly #drains: AgentDrains;
  readonly #placement = new StreamPlacement();
  readonly #placementView: PlacementView<AgentTarget> = {
    isLive: (a) => this.#options.dataPlane.isSessionUp(a.publicKey),
    isDraining: (a) => this.#drains.isDraining(parseIpv4Address(a.address)),
    openStreams: (a) => this.binding.link(parseIpv4Address(a.address))?.mux.streamCount ?? 0,
  };
  /** Links whose GoAway is watched (each once). */
  readonly #watched = new WeakSet<StreamLink>();
  /** The link each opened stream is on, and the calls waiting for a link's drain (whenDraining). */
  readonly #linkOf = new WeakMap<MuxStream, StreamLink>();
  readonly #drainWaiters = new WeakMap<StreamLink, Set<() => void>>();
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(o: HubStreamsOptions) {
    this.#options = o;
    this.binding = o.dataPlane.binding;
    this.#drains = new AgentDrains({
      clock: o.clock,
      max: o.maxDrains ?? 1024,
      waitMs: o.restartWaitMs,
      onChange: (remote, draining) => this.#drainChanged(remote, draining),
    });
    for (const ev of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
      o.ctx.hooks.on(ev, this.#onRevoked);
    }
  }

  /**
   * A stream to `target` on one of the cluster's agents (see the class comment for the errors); `first` bytes
   * travel with the open (open-target.ts) and again with its retry.
   */
  async open(cluster: string, target: string, opts: { first?: Buffer } = {}): Promise<MuxStream> {
    const agents = await this.#acceptedAgents(cluster);
    const agent = this.#pick(cluster, agents);
    try {
      return await this.#openOnAgent({
        cluster,
        agent,
        target,
        first: opts.first,
        alternatives: agents.length > 1,
      });
    } catch (err) {
      // One of several agents failed the open (it died, or went away under it): the stream goes to another live one.
      const other = agents.length > 1 && retryable(err) ? this.#pick(cluster, agents, agent) : null;
      if (other === null || other === agent || !this.#isReady(other)) throw err;
      return this.#openOnAgent({ cluster, agent: other, target, first: opts.first, alternatives: false });
    }
  }

  /**
   * Whether this process holds a live session of an agent of the cluster: one that takes new streams, only draining
   * ones, or none (the mesh forwards the request to a replica that holds one: relay/fleet/mesh/mesh-routing.ts).
   */
  async localAgents(cluster: string): Promise<'ready' | 'draining' | 'none'> {
    const agents = await this.#acceptedAgents(cluster).catch(() => []);
    const live = agents.filter((a) => this.#placementView.isLive(a));
    if (live.some((a) => !this.#placementView.isDraining(a))) return 'ready';
    return live.length > 0 ? 'draining' : 'none';
  }

  /** The agent a new stream of the cluster goes to (stream-placement.ts), `not` left out when another is ready. */
  #pick(cluster: string, agents: readonly AgentTarget[], not?: AgentTarget): AgentTarget {
    const candidates = not === undefined ? agents : agents.filter((a) => a !== not);
    return this.#placement.pick(cluster, candidates, this.#placementView) ?? agents[0]!;
  }

  #isReady(a: AgentTarget): boolean {
    return this.#placementView.isLive(a) && !this.#placementView.isDraining(a);
  }

  async #openOnAgent(o: {
    cluster: string;
    agent: AgentTarget;
    target: string;
    first: Buffer | undefined;
    alternatives: boolean;
  }): Promise<MuxStream> {
    const { cluster, agent, target, first, alternatives } = o;
    const remote = parseIpv4Address(agent.address);
    await this.#drains.wait(remote);
    this.#requireSession(cluster, agent);
    const known = this.#peers.get(remote);
    if (!known || known.publicKey !== agent.publicKey) {
      if (known) this.binding.drop(remote);
      this.#peers.set(remote, { cluster, publicKey: agent.publicKey, downSince: null });
    }
    this.#armWatch();
    try {
      return await this.#openOn(remote, target, first);
    } catch (err) {
      if (this.#closed) throw err;
      // The agent drains (its GoAway came with, or just before, this open's refusal): its open streams finish
      // there, this one waits for its next run.
      if (
        this.#drains.isDraining(remote) &&
        (isTunnelError(err, 'CLOSED') || isTunnelError(err, 'STREAM_REFUSED'))
      ) {
        // Another agent of the cluster takes it at once (open's retry).
        if (alternatives) throw new TunnelError('CLOSED', `the agent of cluster '${cluster}' drains`);
        await this.#drains.wait(remote);
        this.#requireSession(cluster, agent);
        return this.#openOn(remote, target, first);
      }
      // The session closed under the open (the agent restarted): the next open must not find it again, so it is
      // dropped; one retry on a fresh session.
      if (!isTunnelError(err, 'CLOSED')) throw err;
      this.binding.drop(
        remote,
        new TunnelError('CLOSED', `the agent of cluster '${cluster}' ended the session`),
      );
      return this.#openOn(remote, target, first);
    }
  }

  /** The cluster's agents with an address: its primary, and its replicas when it has any (one store read more). */
  async #acceptedAgents(cluster: string): Promise<AgentTarget[]> {
    if (this.#closed) throw new TunnelError('CLOSED', 'the relay is shutting down');
    const { store } = this.#options.ctx;
    const c = await store.getCluster(cluster);
    if (!c) throw new TunnelError('NOT_FOUND', `cluster '${cluster}' not found`);
    const agents: AgentTarget[] = [];
    if (c.status === 'Accepted') {
      const all = c.replicaAgents > 0 ? await store.listAgents(cluster) : [];
      if (all.length === 0 && c.address && c.publicKey)
        agents.push(targetOf(c.publicKey, c.address, c.leaseRenewAt));
      for (const a of all) if (a.address) agents.push(targetOf(a.publicKey, a.address, a.leaseRenewAt));
    }
    if (agents.length === 0) {
      throw new TunnelError(
        'AGENT_NOT_CONNECTED',
        `cluster ${cluster} has no accepted agent (status ${c.status}; see tunnel-relay cluster get ${cluster})`,
      );
    }
    return agents;
  }

  #requireSession(cluster: string, agent: { publicKey: string; leaseRenewAt: number | null }): void {
    if (this.#closed) throw new TunnelError('CLOSED', 'the relay is shutting down');
    if (this.#options.dataPlane.isSessionUp(agent.publicKey)) return;
    const seen = lastSeenText(agent.leaseRenewAt, this.#options.clock.wallNow());
    throw new TunnelError('AGENT_NOT_CONNECTED', `agent for cluster ${cluster} is not connected ${seen}`);
  }

  /** A stream on the agent's session; the session's GoAway (the agent drains) is watched from then on. */
  async #openOn(remote: number, target: string, first: Buffer | undefined): Promise<MuxStream> {
    const stream = await this.binding.open(remote, target, { timeoutMs: this.#options.openTimeoutMs, first });
    const link = this.binding.link(remote);
    if (link) this.#linkOf.set(stream, link);
    if (link && !this.#watched.has(link)) {
      this.#watched.add(link);
      link.mux.on('goaway', (code: number) => {
        if (code !== GOAWAY_NORMAL) return;
        if (this.binding.link(remote) === link) this.#drains.start(remote);
        const waiting = this.#drainWaiters.get(link);
        this.#drainWaiters.delete(link);
        for (const onDrain of waiting ?? []) onDrain();
      });
    }
    return stream;
  }

  /**
   * Calls `onDrain` once when the agent that holds `stream` starts draining (its GoAway, SIGTERM), so a stream
   * that would hold the drain for its whole grace (a watch) can move to the agent's successor at once. Returns
   * the call that stops waiting.
   */
  whenDraining(stream: MuxStream, onDrain: () => void): () => void {
    const link = this.#linkOf.get(stream);
    if (!link) return () => {};
    let waiting = this.#drainWaiters.get(link);
    if (!waiting) {
      waiting = new Set();
      this.#drainWaiters.set(link, waiting);
    }
    waiting.add(onDrain);
    return () => void this.#drainWaiters.get(link)?.delete(onDrain);
  }

  /**
   * A new run of the agent at `address` is up: the previous run's stream session is closed (its streams get
   * CLOSED) and the next open starts a fresh one.
   */
  replaceSession(agent: { cluster: string; address: string }): void {
    if (this.#closed) return;
    const remote = parseIpv4Address(agent.address);
    this.#drains.ended(remote);
    this.#peers.delete(remote);
    this.binding.drop(remote, new TunnelError('CLOSED', `the agent of cluster '${agent.cluster}' restarted`));
  }

  /** Stops opening streams and watching agents (the binding closes with the hub endpoint). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#options.clock.clearTimer(this.#timer);
    this.#drains.close();
    for (const ev of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
      this.#options.ctx.hooks.off(ev, this.#onRevoked);
    }
    this.#peers.clear();
  }

  /** Tells the relay (the fleet's other replicas: no hop to a draining agent) that an agent drains or takes streams again. */
  #drainChanged(remote: number, draining: boolean): void {
    const peer = this.#peers.get(remote);
    if (peer)
      this.#options.ctx.hooks.emit('agent-draining', {
        cluster: peer.cluster,
        publicKey: peer.publicKey,
        draining,
      });
  }

  /** The agent lost its key (its cluster deleted or denied, or it unjoined): its link closes; its cluster's others stay. */
  #dropAgent({ cluster, publicKey }: KeyEvent): void {
    this.#placement.forget(cluster);
    for (const [remote, p] of this.#peers) {
      if (p.cluster !== cluster || p.publicKey !== publicKey) continue;
      this.binding.drop(remote, new TunnelError('AGENT_NOT_CONNECTED', `cluster '${cluster}' was revoked`));
      this.#peers.delete(remote);
    }
  }

  #armWatch(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = this.#options.clock.setTimer(WATCH_INTERVAL_MS, () => {
      this.#timer = undefined;
      this.#watch();
      if (this.#peers.size > 0) this.#armWatch();
    });
  }

  /** Closes links whose agent lost its relay connection for longer than the grace (at once with another live agent). */
  #watch(): void {
    const dp = this.#options.dataPlane;
    const now = this.#options.clock.now();
    const grace = this.#options.disconnectGraceMs ?? DEFAULT_DISCONNECT_GRACE_MS;
    for (const [remote, p] of this.#peers) {
      if (!this.binding.link(remote)) {
        this.#peers.delete(remote);
        continue;
      }
      if (dp.isRelayConnected(p.publicKey)) {
        p.downSince = null;
        continue;
      }
      p.downSince ??= now;
      // With another live agent the cluster is served elsewhere: no request waits out the grace on this one.
      const elsewhere = dp.hasOtherLiveAgent?.(p.cluster, p.publicKey) === true;
      if (elsewhere || now - p.downSince >= grace) {
        this.binding.drop(
          remote,
          new TunnelError('AGENT_NOT_CONNECTED', `the agent of cluster '${p.cluster}' disconnected`),
        );
        this.#peers.delete(remote);
      }
    }
  }
}
