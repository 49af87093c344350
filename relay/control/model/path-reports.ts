/**
 * Keeps each agent's path in the store (agent_paths), written by the replica whose hub holds the agent's
 * session, so that every replica's API shows the same path, remote, RTTs, last switch and reason.
 * The hub reports every agent every 2 s (relay/data/hub/hub-status.ts); a row is written only when the path,
 * remote, reason or last switch changed, an RTT moved by more than a quarter (and 2 ms), or
 * PATH_REPORT_REFRESH_MS passed (the row's age says the holder is still there: a row older than
 * PATH_REPORT_STALE_MS is ignored). `none` is written only by a hub that had the agent connected: every
 * replica's hub knows every admitted agent, and only the one holding its session speaks for it.
 */
import type { Clock } from '../../../shared/clock.js';
import type { AgentPathRecord, Store } from '../store/types.js';
import type { ConnectionStatus } from './hooks.js';

export const PATH_REPORT_REFRESH_MS = 120_000;

export interface PathReportsOptions {
  readonly store: Pick<Store, 'saveAgentPath'>;
  readonly clock: Clock;
  /** Agents tracked at most (the hub's peer cap): past it, new agents' paths are not written. */
  readonly maxAgents: number;
  readonly log?: (obj: object, msg: string) => void;
}

/** The record of `status` as this relay reports it now. */
export function pathRecord(
  cluster: string,
  status: Pick<ConnectionStatus, 'connected' | 'path' | 'pathDetail'>,
  now: number,
): AgentPathRecord {
  const d = status.connected ? status.pathDetail : null;
  return {
    cluster,
    path: status.connected ? status.path : 'none',
    remote: d?.remote ?? null,
    rttDirectMs: d?.rttDirectMs ?? null,
    rttRelayedMs: d?.rttRelayedMs ?? null,
    lastSwitchAt: d?.lastSwitch ?? null,
    reason: d?.reason ?? null,
    reportedAt: now,
  };
}

function rttMoved(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return a !== b;
  return Math.abs(a - b) > Math.max(2, a / 4);
}

function changed(a: AgentPathRecord, b: AgentPathRecord): boolean {
  return (
    a.path !== b.path ||
    a.remote !== b.remote ||
    a.reason !== b.reason ||
    a.lastSwitchAt !== b.lastSwitchAt ||
    rttMoved(a.rttDirectMs, b.rttDirectMs) ||
    rttMoved(a.rttRelayedMs, b.rttRelayedMs)
  );
}

export class PathReports {
  readonly #options: PathReportsOptions;
  /** The last row written per cluster this hub holds (none once `none` is written). */
  readonly #written = new Map<string, AgentPathRecord>();
  readonly #writing = new Set<string>();

  constructor(o: PathReportsOptions) {
    this.#options = o;
  }

  /** The hub's status of the cluster's agent (every status tick, and on changes). */
  note(cluster: string, status: ConnectionStatus): void {
    const rec = pathRecord(cluster, status, this.#options.clock.wallNow());
    const prev = this.#written.get(cluster);
    if (!prev && rec.path === 'none') return;
    if (prev && !changed(prev, rec) && rec.reportedAt - prev.reportedAt < PATH_REPORT_REFRESH_MS) return;
    if (!prev && this.#written.size >= this.#options.maxAgents) return;
    this.#write(rec);
  }

  /** The agent was removed from this hub (deleted, denied, unjoined): its row says `none` if it said more. */
  forget(cluster: string): void {
    if (!this.#written.has(cluster)) return;
    this.#write(pathRecord(cluster, { connected: false, path: 'none' }, this.#options.clock.wallNow()));
  }

  #write(rec: AgentPathRecord): void {
    if (this.#writing.has(rec.cluster)) return; // the next status tick tries again
    this.#writing.add(rec.cluster);
    this.#options.store
      .saveAgentPath(rec)
      .then(() => {
        if (rec.path === 'none') this.#written.delete(rec.cluster);
        else this.#written.set(rec.cluster, rec);
      })
      .catch((err: unknown) =>
        this.#options.log?.({ cluster: rec.cluster, err }, 'store: agent path not saved'),
      )
      .finally(() => this.#writing.delete(rec.cluster));
  }
}
