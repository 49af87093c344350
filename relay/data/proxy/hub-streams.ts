/**
 * The hub's side of the streams: `open(cluster, target)` on the hub endpoint's stream binding (mux role
 * 'client', from the hub address 100.64.0.1), which the proxies call. It resolves the cluster,
 * fails fast when no agent session is live, and maps refusals to stable codes:
 *   NOT_FOUND (no such cluster), AGENT_NOT_CONNECTED (no agent, or its session is down),
 *   STREAM_REFUSED / UPSTREAM_FAILED / BAD_INPUT (the agent's answer), TIMEOUT (no answer in time).
 * A link whose agent has had no relay connection for `disconnectGraceMs` is closed (its streams
 * error at once instead of waiting for the mux keepalive), and so is a link whose cluster is deleted,
 * denied or unjoined.
 * A new run of an agent's process (the hub node's `onAgentRun`, relay/data/hub/agent-runs.ts) replaces its stream
 * session at once (`replaceSession`): no new stream goes to the previous run's session. A session that still
 * closes under an open (the peer's GoAway, or its restart noticed first by the ARQ) is dropped and the open
 * retried once on a fresh session.
 */

import type { Clock, TimerHandle } from '../../../shared/clock.js';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import type { StreamBinding } from '../../../shared/net/tunnel-streams/stream-binding.js';
import type { RelayContext } from '../../context/context.js';
import type { KeyEvent } from '../../control/model/relay-events.js';
import { lastSeenText } from './last-seen.js';

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
}

export interface HubStreamsOptions {
  ctx: Pick<RelayContext, 'store' | 'hooks'>;
  clock: Clock;
  dataPlane: HubStreamsDataPlane;
  openTimeoutMs?: number;
  disconnectGraceMs?: number;
}

interface Peer {
  cluster: string;
  publicKey: string;
  downSince: number | null;
}

export class HubStreams {
  readonly binding: StreamBinding;
  readonly #options: HubStreamsOptions;
  readonly #peers = new Map<number, Peer>();
  readonly #onRevoked = (e: KeyEvent): void => this.#dropCluster(e.cluster);
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(o: HubStreamsOptions) {
    this.#options = o;
    this.binding = o.dataPlane.binding;
    for (const ev of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
      o.ctx.hooks.on(ev, this.#onRevoked);
    }
  }

  /** A stream to `target` on the cluster's agent (see the class comment for the errors). */
  async open(cluster: string, target: string): Promise<MuxStream> {
    if (this.#closed) throw new TunnelError('CLOSED', 'the relay is shutting down');
    const c = await this.#options.ctx.store.getCluster(cluster);
    if (!c) throw new TunnelError('NOT_FOUND', `cluster '${cluster}' not found`);
    if (c.status !== 'Accepted' || !c.address || !c.publicKey) {
      throw new TunnelError(
        'AGENT_NOT_CONNECTED',
        `cluster ${cluster} has no accepted agent (status ${c.status}; see tunnel-relay cluster get ${cluster})`,
      );
    }
    if (!this.#options.dataPlane.isSessionUp(c.publicKey)) {
      const seen = lastSeenText(c.leaseRenewAt, this.#options.clock.wallNow());
      throw new TunnelError('AGENT_NOT_CONNECTED', `agent for cluster ${cluster} is not connected ${seen}`);
    }
    const remote = parseIpv4Address(c.address);
    const known = this.#peers.get(remote);
    if (!known || known.publicKey !== c.publicKey) {
      if (known) this.binding.drop(remote);
      this.#peers.set(remote, { cluster, publicKey: c.publicKey, downSince: null });
    }
    this.#armWatch();
    try {
      return await this.binding.open(remote, target, this.#options.openTimeoutMs);
    } catch (err) {
      // The session closed or goes away under the open (the agent restarted or stops its side): the next open
      // must not find it again, so it is dropped; one retry on a fresh session.
      if (!isTunnelError(err, 'CLOSED') || this.#closed) throw err;
      this.binding.drop(
        remote,
        new TunnelError('CLOSED', `the agent of cluster '${cluster}' ended the session`),
      );
      return this.binding.open(remote, target, this.#options.openTimeoutMs);
    }
  }

  /**
   * A new run of the agent at `address` is up: the previous run's stream session is closed (its streams get
   * CLOSED) and the next open starts a fresh one.
   */
  replaceSession(agent: { cluster: string; address: string }): void {
    if (this.#closed) return;
    const remote = parseIpv4Address(agent.address);
    this.#peers.delete(remote);
    this.binding.drop(remote, new TunnelError('CLOSED', `the agent of cluster '${agent.cluster}' restarted`));
  }

  /** Stops opening streams and watching agents (the binding closes with the hub endpoint). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#options.clock.clearTimer(this.#timer);
    for (const ev of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
      this.#options.ctx.hooks.off(ev, this.#onRevoked);
    }
    this.#peers.clear();
  }

  #dropCluster(cluster: string): void {
    for (const [remote, p] of this.#peers) {
      if (p.cluster !== cluster) continue;
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

  /** Closes links whose agent lost its relay connection for longer than the grace. */
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
      if (now - p.downSince >= grace) {
        this.binding.drop(
          remote,
          new TunnelError('AGENT_NOT_CONNECTED', `the agent of cluster '${p.cluster}' disconnected`),
        );
        this.#peers.delete(remote);
      }
    }
  }
}
