/**
 * `tunnel-relay cluster list --watch`: follows GET /api/v1/events. On a terminal it draws the `cluster list`
 * table and redraws it as clusters change (ages refreshed every few seconds); otherwise it prints the table
 * once, then one row per change (`NAME  deleted` for a deletion); with `-o json`, one JSON object per line:
 * `{"event":"cluster","cluster":{...}}` per cluster and change, `{"event":"ready"}` after the first snapshot,
 * `{"event":"cluster-deleted","name":"..."}`. --status and --group filter every form.
 *
 * A stream that drops is opened again after RETRY_MIN_MS, doubling up to RETRY_MAX_MS (back to the minimum
 * once a stream delivered its snapshot); its fresh snapshot is compared with what was shown, so changes and
 * deletions made meanwhile are printed too. A credential the relay refuses (or revokes) ends the command with
 * that error. Ctrl-C (or SIGTERM) ends it with exit code 0.
 */
import { ERROR_CODES, type ErrorCode, TunnelError } from '../../shared/errors.js';
import type { RelayClient } from '../../shared/kit/http/client.js';
import { type SseEvent, SseParser } from '../../shared/kit/http/sse-parser.js';
import { type AdminFlags, withClient } from './admin-client.js';
import type { Cluster } from './cluster.js';
import { type WatchView, watchViewFor } from './cluster-watch-view.js';

export const RETRY_MIN_MS = 500;
export const RETRY_MAX_MS = 30_000;
/** Nothing (not even the relay's 15 s keepalive) received for this long: the stream is dead. */
export const IDLE_TIMEOUT_MS = 45_000;
/** Errors no retry can fix: the command ends with them. */
const FATAL = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'CA_PIN_MISMATCH', 'BAD_INPUT', 'NOT_FOUND']);

/** Follows the feed until Ctrl-C / SIGTERM (resolves) or a fatal error (throws). */
export async function watchClusters(flags: AdminFlags, matches: (c: Cluster) => boolean): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const view = watchViewFor({ flags, matches });
  try {
    await withClient(flags, (client) => follow(client, view, stop.signal));
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    view.close();
  }
}

async function follow(client: RelayClient, view: WatchView, signal: AbortSignal): Promise<void> {
  let retryMs = RETRY_MIN_MS;
  while (!signal.aborted) {
    let reachedReady = false;
    try {
      await followOnce(client, view, signal, () => {
        reachedReady = true;
      });
      if (signal.aborted) return;
      view.status(`the relay ended the stream; reconnecting in ${seconds(retryMs)}`);
    } catch (err) {
      if (signal.aborted) return;
      const e = err instanceof TunnelError ? err : new TunnelError('INTERNAL', String(err));
      if (FATAL.has(e.code)) throw e;
      view.status(`stream lost (${e.code}: ${e.message}); reconnecting in ${seconds(retryMs)}`);
    }
    retryMs = reachedReady ? RETRY_MIN_MS : retryMs;
    await sleep(retryMs, signal);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  }
}

/** One stream: its snapshot (compared with what is shown), then its changes; returns when it ends. */
async function followOnce(
  client: RelayClient,
  view: WatchView,
  signal: AbortSignal,
  onReady: () => void,
): Promise<void> {
  const chunks = await client.stream('/api/v1/events', { signal, idleTimeoutMs: IDLE_TIMEOUT_MS });
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const snapshot = new Map<string, Cluster>();
  let live = false;
  for await (const chunk of chunks) {
    for (const e of parser.push(decoder.decode(chunk, { stream: true }))) {
      if (e.event === 'end') throw endError(e);
      if (e.event === 'ready') {
        live = true;
        view.snapshot(snapshot);
        onReady();
      } else if (e.event === 'cluster') {
        const c = parseData<Cluster>(e);
        if (live) view.change(c);
        else snapshot.set(c.name, c);
      } else if (e.event === 'cluster-deleted') {
        const { name } = parseData<{ name: string }>(e);
        if (live) view.deleted(name);
        else snapshot.delete(name);
      }
    }
  }
}

function parseData<T>(e: SseEvent): T {
  try {
    return JSON.parse(e.data) as T;
  } catch {
    throw new TunnelError('RELAY_BAD_RESPONSE', `event stream: the data of a ${e.event} event is not JSON`);
  }
}

/** The error an `end` event carries (key revoked or expired, relay closing). */
function endError(e: SseEvent): TunnelError {
  const body = parseData<{ code?: unknown; message?: unknown }>(e);
  const code = typeof body.code === 'string' ? body.code : 'CLOSED';
  const message = typeof body.message === 'string' ? body.message : 'the relay ended the stream';
  return new TunnelError(isErrorCode(code) ? code : 'CLOSED', message);
}

function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)}s`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
