/**
 * The changes of the clusters the page shows: GET /api/v1/events?snapshot=false (server-sent events read with fetch,
 * since EventSource cannot send the Authorization header). The stream sends `ready` at once (no snapshot: the
 * console reads the clusters a page at a time itself, cluster-pages.ts), then one `cluster` event per change and
 * `cluster-deleted` per removal; `end` (with the error's code and message) when the relay ends the stream (a
 * revoked key then gets 401 on reconnect, which signs out). Each `ready` asks for the first page again
 * (`resync`), so nothing that changed while the stream was down is missed. A relay without the feed (404) is
 * polled instead: the first page every POLL_MS. A dropped stream reconnects with backoff; every wait is bounded.
 */
import { type Api, ApiError } from './api.js';
import { SseParser } from './sse-parser.js';
import type { Cluster } from './types.js';

export type FeedMode = 'connecting' | 'live' | 'polling' | 'offline';

export interface FeedHandlers {
  /** Read the first page again: the stream is live (its `ready`), or a poll is due. */
  resync(): void;
  upsert(cluster: Cluster): void;
  remove(name: string): void;
  mode(mode: FeedMode, detail?: string): void;
}

export const POLL_MS = 1000;
const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 10_000;
/** In polling mode, how often the feed is tried again (a relay upgraded under the page). */
const FEED_RETRY_MS = 30_000;
/** With no bytes (not even a keepalive) for this long, the stream is taken as dead and reopened. */
const SILENCE_MS = 45_000;

type StreamEnd = 'ended' | 'missing';

async function readStream(api: Api, h: FeedHandlers, signal: AbortSignal): Promise<StreamEnd> {
  const res = await api.raw('/api/v1/events?snapshot=false', { signal, accept: 'text/event-stream' });
  if (res.status === 404) return 'missing';
  if (!res.ok || !res.body)
    throw new ApiError(res.status, `HTTP_${res.status}`, `events feed: ${res.status}`);
  const parser = new SseParser();
  let ready = false;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const silence = new Promise<'silent'>((r) => {
      timer = setTimeout(() => r('silent'), SILENCE_MS);
    });
    const next = await Promise.race([reader.read(), silence]);
    clearTimeout(timer);
    if (next === 'silent') {
      await reader.cancel();
      return 'ended';
    }
    if (next.done) return 'ended';
    for (const ev of parser.push(next.value)) {
      if (ev.event === 'cluster') {
        h.upsert(JSON.parse(ev.data) as Cluster);
      } else if (ev.event === 'cluster-deleted') {
        h.remove((JSON.parse(ev.data) as { name: string }).name);
      } else if (ev.event === 'end') {
        // The relay ends the stream (key revoked or expired, relay closing): say why; the reconnect decides.
        h.mode(
          'offline',
          (JSON.parse(ev.data) as { message?: string }).message ?? 'the relay ended the feed',
        );
      } else if (ev.event === 'ready' && !ready) {
        ready = true;
        h.resync();
        h.mode('live');
      }
    }
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      r();
    });
  });

async function poll(h: FeedHandlers, signal: AbortSignal): Promise<void> {
  const until = Date.now() + FEED_RETRY_MS;
  h.mode('polling');
  while (!signal.aborted && Date.now() < until) {
    h.resync();
    await sleep(POLL_MS, signal);
  }
}

/** Starts following; the returned function stops it. */
export function startClusterFeed(api: Api, h: FeedHandlers): () => void {
  const ctl = new AbortController();
  void (async () => {
    let retry = RETRY_MIN_MS;
    while (!ctl.signal.aborted) {
      h.mode('connecting');
      try {
        const end = await readStream(api, h, ctl.signal);
        if (end === 'missing') {
          await poll(h, ctl.signal);
          continue;
        }
        retry = RETRY_MIN_MS;
      } catch (err) {
        if (ctl.signal.aborted) return;
        h.mode('offline', (err as Error).message);
        retry = Math.min(RETRY_MAX_MS, retry * 2);
      }
      await sleep(retry, ctl.signal);
    }
  })();
  return () => ctl.abort();
}
