/**
 * How a relay process (either mode) closes and drains. close: stop accepting, wait for in-flight requests, cut the
 * connections still open after the grace, then run the mode's own steps (ports, store). drain (SIGTERM, see
 * relay/fleet/drain.ts): /readyz fails at once; after DRAIN_READINESS_MS, once nothing the drain tracks is in flight (or
 * the grace less DRAIN_CLOSE_RESERVE_MS ran out), the agents are moved; requests are served until DRAIN_QUIET_MS
 * pass without one, then the relay closes, cutting connections still open when the grace ends.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import type { DrainState } from '../fleet/drain.js';
import type { ClosingFlag } from './fastify-app.js';
import {
  DRAIN_CLOSE_RESERVE_MS,
  DRAIN_QUIET_MS,
  DRAIN_QUIET_RESERVE_MS,
  DRAIN_READINESS_MS,
} from './limits.js';

export type CloseWithin = (forceAfterMs: number) => Promise<void>;

export interface CloserOptions {
  app: FastifyInstance;
  closing: ClosingFlag;
  /** Before the server closes (leave the fleet, stop STUN). */
  before(): Promise<void>;
  /** Once the server closed (UDP port, store, listeners). */
  after(): Promise<void>;
}

/** Closes once (later calls get the same promise); connections still open after `forceAfterMs` are cut. */
export function closer(o: CloserOptions): CloseWithin {
  let done: Promise<void> | null = null;
  const run = async (forceAfterMs: number): Promise<void> => {
    o.closing.set();
    await o.before();
    // Stop accepting, wait for in-flight requests; sockets still open after the grace are cut.
    const force = setTimeout(() => o.app.server.closeAllConnections(), forceAfterMs);
    force.unref();
    await o.app.close();
    clearTimeout(force);
    await o.after();
  };
  return (forceAfterMs) => {
    done ??= run(forceAfterMs);
    return done;
  };
}

export interface DrainInput {
  drain: DrainState;
  clock: Clock;
  log: Logger;
  /** Agents connected here, for the log line. */
  agents(): number;
  /** What the in-flight wait waits for, and how agents are moved, in the log lines. */
  words: { inFlight: string; move: string };
  graceMs: number;
  closeWithin: CloseWithin;
}

/** RunningRelay.drain: see the file comment. */
export async function drainRelay(d: DrainInput): Promise<void> {
  const started = d.clock.now();
  const left = () => d.graceMs - (d.clock.now() - started);
  if (d.drain.start()) {
    d.log.info(
      { graceMs: d.graceMs, inFlight: d.drain.inFlight() },
      `draining: readiness fails, no new agents; waiting for in-flight ${d.words.inFlight}`,
    );
    const reserve = Math.min(DRAIN_CLOSE_RESERVE_MS, d.graceMs / 2);
    const cut = await d.drain.whenIdle({ timeoutMs: d.graceMs - reserve, notBeforeMs: DRAIN_READINESS_MS });
    if (Object.keys(cut).length > 0)
      d.log.warn(
        { inFlight: cut },
        `draining: grace ran out with ${d.words.inFlight} in flight; cutting them`,
      );
    d.log.info({ agents: d.agents() }, `draining: moving agents (${d.words.move})`);
    await d.drain.moveAgents();
    const quiet = await d.drain.whenQuiet({
      quietMs: DRAIN_QUIET_MS,
      timeoutMs: Math.max(0, left() - DRAIN_QUIET_RESERVE_MS),
    });
    d.log.info({ quiet }, 'draining: closing');
  }
  await d.closeWithin(Math.max(0, left()));
}
