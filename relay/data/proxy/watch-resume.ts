/**
 * A Kubernetes watch (`GET ...?watch=true`, JSON) kept open across the loss of its agent stream: when the stream
 * is cut (the agent restarted, was killed or drained) before the API server ended the body, the watch is reopened
 * on the cluster's next agent stream from the last event's resourceVersion, and the client's response goes on.
 * The client only ever gets whole events (watch-lines.ts). A reopen the API server refuses (410 Gone: the version
 * is too old) reaches the client as the ERROR event kube-apiserver itself would send, and the watch ends.
 * A watch on an agent that starts draining (SIGTERM) is cut and reopened at once rather than holding the agent's
 * drain for its grace. The reopen is tried for WATCH_RESUME_WINDOW_MS, at most MAX_WATCH_RESUMES times per watch; an answer that is
 * not a 200 JSON watch, or a body that stops being whole events, is passed through as any request.
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ErrorCode, isTunnelError, TunnelError } from '../../../shared/errors.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import { WatchLines } from './watch-lines.js';

export const WATCH_RESUME_WINDOW_MS = 30_000;
export const MAX_WATCH_RESUMES = 20;
const RETRY_MS = 250;
const MAX_REFUSAL_BYTES = 64 * 1024;
/** Refusals that no later attempt changes. */
const FINAL: readonly ErrorCode[] = [
  'NOT_FOUND',
  'FORBIDDEN',
  'UNAUTHENTICATED',
  'BAD_INPUT',
  'STREAM_REFUSED',
];

export interface WatchForward {
  req: IncomingMessage;
  res: ServerResponse;
  /** The upstream path with its query (watch=true). */
  path: string;
  headers: readonly string[];
  /** A new stream to the cluster's upstream (the first one is given as `first`). */
  open(): Promise<MuxStream>;
  first: MuxStream;
  answerHeaders(rawHeaders: string[]): OutgoingHttpHeaders | string[];
  onAnswer?(status: number): void;
  /** Each reopen, with the version it starts from. */
  onResume?(resourceVersion: string | null): void;
  /** Calls `onDrain` when the agent holding `stream` starts draining; returns the call that stops waiting. */
  whenDraining?(stream: MuxStream, onDrain: () => void): () => void;
}

/** A GET whose query asks for a watch. */
export function isWatchRequest(method: string | undefined, path: string): boolean {
  if (method !== 'GET') return false;
  const watch = new URL(path, 'http://x').searchParams.get('watch');
  return watch === 'true' || watch === '1';
}

/** The path that reopens the watch at `resourceVersion` (an initial-events request becomes a plain watch). */
export function resumePath(path: string, resourceVersion: string | null): string {
  const url = new URL(path, 'http://x');
  if (resourceVersion !== null) url.searchParams.set('resourceVersion', resourceVersion);
  url.searchParams.delete('sendInitialEvents');
  url.searchParams.delete('resourceVersionMatch');
  return `${url.pathname}${url.search}`;
}

type Outcome = 'ended' | 'cut';

function errorEvent(status: number, body: string): string {
  let object: unknown;
  try {
    object = JSON.parse(body);
  } catch {
    object = undefined;
  }
  if (typeof object !== 'object' || object === null || (object as { kind?: unknown }).kind !== 'Status') {
    const reason = status === 410 ? 'Expired' : 'InternalError';
    object = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: body.slice(0, 512),
      reason,
      code: status,
    };
  }
  return `${JSON.stringify({ type: 'ERROR', object })}\n`;
}

/** One upstream attempt; the first answer writes the client's head, later ones only add events. */
function attempt(o: WatchForward, stream: MuxStream, path: string, lines: WatchLines): Promise<Outcome> {
  const { res } = o;
  const upstream = http.request({
    method: 'GET',
    path,
    headers: [...o.headers],
    setHost: false,
    createConnection: () => stream,
  });
  return new Promise<Outcome>((resolve) => {
    const onClientGone = () => {
      stream.destroy();
      done('ended');
    };
    const done = (outcome: Outcome) => {
      res.off('close', onClientGone);
      resolve(outcome);
    };
    res.once('close', onClientGone);
    upstream.on('error', () => done('cut'));
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 502;
      const json = /^application\/json/i.test(String(answer.headers['content-type'] ?? ''));
      if (!res.headersSent) {
        o.onAnswer?.(status);
        res.writeHead(status, answer.statusMessage, o.answerHeaders(answer.rawHeaders));
        if (status !== 200 || !json) {
          answer.pipe(res);
          return void answer.on('close', () => done('ended'));
        }
      } else if (status !== 200) {
        return void refusal(answer, status, res, () => done('ended'));
      }
      answer.on('data', (chunk: Buffer) => {
        for (const piece of lines.push(chunk)) res.write(piece);
      });
      answer.on('error', () => {});
      answer.on('close', () => done(answer.complete ? 'ended' : 'cut'));
    });
    upstream.end();
  });
}

/** A reopen the API server refused, sent as the ERROR event that ends the watch. */
function refusal(answer: IncomingMessage, status: number, res: ServerResponse, then: () => void): void {
  let body = '';
  answer.on('data', (d: Buffer) => {
    if (body.length < MAX_REFUSAL_BYTES) body += d.toString('utf8');
  });
  answer.on('error', () => {});
  answer.on('close', () => {
    res.end(errorEvent(status, body));
    then();
  });
}

/** A new stream within the window, or null when none comes (or the refusal is final). */
async function reopen(o: WatchForward, deadline: number): Promise<MuxStream | null> {
  while (!o.res.destroyed && Date.now() < deadline) {
    try {
      return await o.open();
    } catch (err) {
      if (FINAL.some((code) => isTunnelError(err, code))) return null;
      await sleep(RETRY_MS);
    }
  }
  return null;
}

/** Forwards the watch, reopening it as the header comment says; resolves when the client's answer is over. */
export async function forwardWatch(o: WatchForward): Promise<void> {
  const initial = new URL(o.path, 'http://x').searchParams.get('resourceVersion');
  const lines = new WatchLines(initial === '' ? null : initial);
  let stream: MuxStream | null = o.first;
  let path = o.path;
  for (let resumes = 0; stream !== null; resumes++) {
    stream.on('error', () => {});
    // A draining agent would hold the watch for its whole grace: the watch moves to its successor at once.
    const current: MuxStream = stream;
    const stopWaiting = o.whenDraining?.(current, () => current.destroy()) ?? (() => {});
    const outcome = await attempt(o, stream, path, lines);
    stopWaiting();
    if (outcome === 'ended' || o.res.destroyed || !lines.resumable || resumes >= MAX_WATCH_RESUMES) break;
    lines.discardPartial();
    stream = await reopen(o, Date.now() + WATCH_RESUME_WINDOW_MS);
    path = resumePath(o.path, lines.resourceVersion);
    if (stream) o.onResume?.(lines.resourceVersion);
  }
  if (!o.res.headersSent) {
    throw new TunnelError('AGENT_NOT_CONNECTED', 'the watch lost its agent and no agent came back in time');
  }
  if (!o.res.writableEnded) o.res.end();
}
