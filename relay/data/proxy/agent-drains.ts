/**
 * Agents that said they take no new streams (a GoAway with the normal code on their stream session: the agent
 * got SIGTERM and drains, tunnel-client/session/agent-session.ts `drain`). A new stream for such an agent waits
 * for its next run (the hub node's `onAgentRun`, relay/data/hub/agent-runs.ts) for up to AGENT_RESTART_WAIT_MS
 * instead of going to the stopping process, so a restart loses no request. One entry per agent address, at most
 * `max` (the hub's stream links); waiters are the requests in flight, bounded by the relay's connection caps.
 */
import type { Clock, TimerHandle } from '../../../shared/clock.js';

/** How long a new stream for a draining agent waits for the agent's next run. */
export const AGENT_RESTART_WAIT_MS = 10_000;

interface Drain {
  until: number;
  waiters: Array<() => void>;
  timer: TimerHandle;
}

export interface AgentDrainsOptions {
  clock: Clock;
  max: number;
  waitMs?: number;
  /** Called when the agent at `remote` starts draining (true) and when that ends (false): its next run, or the wait over. */
  onChange?: (remote: number, draining: boolean) => void;
}

export class AgentDrains {
  readonly #options: AgentDrainsOptions;
  readonly #drains = new Map<number, Drain>();

  constructor(o: AgentDrainsOptions) {
    this.#options = o;
  }

  /** The agent at `remote` drains: new streams wait for its next run (a repeat keeps the first deadline). */
  start(remote: number): void {
    if (this.#drains.has(remote) || this.#drains.size >= this.#options.max) return;
    const waitMs = this.#options.waitMs ?? AGENT_RESTART_WAIT_MS;
    const timer = this.#options.clock.setTimer(waitMs, () => this.ended(remote));
    this.#drains.set(remote, { until: this.#options.clock.now() + waitMs, waiters: [], timer });
    this.#options.onChange?.(remote, true);
  }

  isDraining(remote: number): boolean {
    return this.#drains.has(remote);
  }

  /** Resolves when the agent's next run is up or the wait is over (at once when it is not draining). */
  wait(remote: number): Promise<void> {
    const d = this.#drains.get(remote);
    if (!d) return Promise.resolve();
    return new Promise((resolve) => d.waiters.push(resolve));
  }

  /** The agent's next run is up (or the wait is over): the waiting streams go on. */
  ended(remote: number): void {
    const d = this.#drains.get(remote);
    if (!d) return;
    this.#drains.delete(remote);
    this.#options.clock.clearTimer(d.timer);
    this.#options.onChange?.(remote, false);
    for (const w of d.waiters.splice(0)) w();
  }

  close(): void {
    for (const remote of [...this.#drains.keys()]) this.ended(remote);
  }
}
