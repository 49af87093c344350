/**
 * What the events-feed tests share: `curl -N` on GET /api/v1/events of a real relay, its events parsed as they
 * arrive (with the time each arrived), and JSON calls to the relay API with an access key (undici).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, type Dispatcher, request } from 'undici';
import { type SseEvent, SseParser } from '../shared/kit/http/sse-parser.js';
import { pollUntil } from './helpers/wait.js';

export interface ReceivedEvent extends SseEvent {
  /** Date.now() when curl printed it. */
  at: number;
}

/** A `curl -sSN` reading the feed with `key`, trusting the relay's self-signed certificate `caFile`. */
export class EventCurl {
  readonly events: ReceivedEvent[] = [];
  readonly exited: Promise<number | null>;
  /** Everything curl printed (the raw stream). */
  raw = '';
  stderr = '';
  readonly #child: ChildProcess;

  constructor(opts: { url: string; key: string; caFile: string }) {
    const parser = new SseParser();
    this.#child = spawn(
      'curl',
      [
        '-sSN',
        '--cacert',
        opts.caFile,
        '-H',
        `Authorization: Bearer ${opts.key}`,
        `${opts.url}/api/v1/events`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.#child.stdout!.setEncoding('utf8');
    this.#child.stdout!.on('data', (text: string) => {
      this.raw += text;
      const at = Date.now();
      for (const e of parser.push(text)) this.events.push({ ...e, at });
    });
    this.#child.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.exited = new Promise((resolve) => this.#child.on('close', (code) => resolve(code)));
  }

  /** The first event (from `from` on) that `pred` accepts; fails after `ms`. */
  async waitFor(
    pred: (e: ReceivedEvent) => boolean,
    ms: number,
    what: string,
    from = 0,
  ): Promise<ReceivedEvent> {
    const got = () => `got: ${this.events.map((e) => e.event).join(',')} ${this.stderr}`;
    const hit = await pollUntil({
      what,
      read: () => this.events.slice(from).find(pred),
      until: (e): e is ReceivedEvent => e !== undefined,
      timeoutMs: ms,
      intervalMs: 20,
    }).catch((err: Error) => {
      throw new Error(`${err.message}; ${got()}`);
    });
    return hit.value;
  }

  /** The `cluster` events' data for `name`, parsed. */
  clusters(name: string): Array<Record<string, unknown>> {
    return this.events
      .filter((e) => e.event === 'cluster')
      .map((e): Record<string, unknown> => JSON.parse(e.data))
      .filter((c) => c.name === name);
  }

  stop(): void {
    this.#child.kill('SIGKILL');
  }
}

const agents = new Map<string, Agent>();

/** A JSON call to the relay API with `key`, trusting `caFile`; the status and parsed body. */
export async function api(
  opts: { url: string; key: string; caFile: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  let dispatcher = agents.get(opts.caFile);
  if (!dispatcher) {
    dispatcher = new Agent({ connect: { ca: readFileSync(opts.caFile, 'utf8') } });
    agents.set(opts.caFile, dispatcher);
  }
  const headers: Record<string, string> = { authorization: `Bearer ${opts.key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(`${opts.url}${path}`, {
    method: method as Dispatcher.HttpMethod,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    dispatcher,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text === '' ? {} : JSON.parse(text) };
}
