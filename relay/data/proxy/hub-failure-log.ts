/**
 * A short warn line when a hub request (the path proxy's plain requests and upgrades) is answered 502 or 503: which
 * cluster, the status and the code, and the message. At most one line per cluster and code every
 * HUB_FAILURE_LOG_MS (a kubectl retrying against an agent that is down would otherwise write a line per request);
 * the next line says how many were not logged. The per-cluster memory is capped.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../../shared/clock.js';
import type { TunnelError } from '../../../shared/errors.js';

export const HUB_FAILURE_LOG_MS = 10_000;
/** Cluster-and-code pairs remembered at once; the oldest is forgotten past this. */
export const HUB_FAILURE_LOG_KEYS = 1_024;

export class HubFailureLog {
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #last = new Map<string, { at: number; unlogged: number }>();

  constructor(log: Logger, clock: Clock) {
    this.#log = log;
    this.#clock = clock;
  }

  /** Logs `err`'s answer when its status is 502 or 503 (INTERNAL errors are logged at error elsewhere). */
  note(cluster: string | null, status: number, err: TunnelError): void {
    if ((status !== 502 && status !== 503) || err.code === 'INTERNAL') return;
    const key = `${cluster ?? '-'} ${err.code}`;
    const now = this.#clock.now();
    const seen = this.#last.get(key);
    if (seen && now - seen.at < HUB_FAILURE_LOG_MS) {
      seen.unlogged++;
      return;
    }
    this.#last.delete(key);
    if (this.#last.size >= HUB_FAILURE_LOG_KEYS) this.#last.delete(this.#last.keys().next().value ?? '');
    this.#last.set(key, { at: now, unlogged: 0 });
    const fields = {
      cluster,
      status,
      code: err.code,
      ...(seen?.unlogged ? { unlogged: seen.unlogged } : {}),
    };
    this.#log.warn(fields, `hub request failed: ${err.message}`);
  }
}
