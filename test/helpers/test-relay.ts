/**
 * Helpers for tests that run a real relay on a random loopback port: a temporary data dir, an
 * HTTPS client that trusts the relay's self-signed certificate, and log capture.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Agent, request } from 'undici';
import { type RelayConfig, resolveRelayConfig } from '../../relay/ops/config/config.js';
import { type RunningRelay, type StartOptions, startRelay } from '../../relay/start/server.js';
import type { Clock } from '../../shared/clock.js';

export class LogCapture extends Writable {
  readonly chunks: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.chunks.push(chunk.toString('utf8'));
    cb();
  }
  get text(): string {
    return this.chunks.join('');
  }
}

export interface TestRelay {
  relay: RunningRelay;
  dir: string;
  config: RelayConfig;
  logs: LogCapture;
  agent: Agent;
  /** JSON request; returns status, parsed body (JSON or text) and headers. */
  call(
    method: string,
    path: string,
    opts?: {
      token?: string;
      body?: unknown;
      rawBody?: string;
      contentType?: string;
      headers?: Record<string, string>;
    },
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  ): Promise<{ status: number; body: any; text: string; headers: Record<string, unknown> }>;
  restart(): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startTestRelay(
  opts: {
    clock?: Clock;
    flags?: Record<string, unknown>;
    dir?: string;
    plugins?: StartOptions['plugins'];
  } = {},
): Promise<TestRelay> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'relay-test-'));
  const config = resolveRelayConfig({
    flags: {
      listen: '127.0.0.1:0',
      dataDir: dir,
      logLevel: 'info',
      udpPort: 'off',
      stunPort: 'off',
      ...opts.flags,
    },
  });
  const logs = new LogCapture();
  const start = () =>
    startRelay(config, {
      logStream: logs,
      ...(opts.clock ? { clock: opts.clock } : {}),
      ...(opts.plugins ? { plugins: opts.plugins } : {}),
    });
  const t: TestRelay = {
    relay: await start(),
    dir,
    config,
    logs,
    agent: null as unknown as Agent,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined;
      if (o.rawBody !== undefined) body = o.rawBody;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined) headers['content-type'] = o.contentType ?? 'application/json';
      const res = await request(`${t.relay.url}${path}`, {
        method: method as 'GET',
        headers,
        ...(body !== undefined ? { body } : {}),
        dispatcher: t.agent,
      });
      const text = await res.body.text();
      let parsed: unknown = text;
      if (String(res.headers['content-type'] ?? '').startsWith('application/json')) parsed = JSON.parse(text);
      return { status: res.statusCode, body: parsed, text, headers: res.headers };
    },
    async restart() {
      await t.relay.close();
      await t.agent.close();
      t.relay = await start();
      t.agent = new Agent({ connect: { ca: t.relay.caPem } });
    },
    async cleanup() {
      await t.relay.close();
      await t.agent.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
  t.agent = new Agent({ connect: { ca: t.relay.caPem } });
  return t;
}
