/**
 * Helpers for the CLI end-to-end tests: build dist/ when it is older than the sources, run the real
 * binaries, start and stop `tunnel-relay serve`, and clean up every process and directory.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { RELAY_BIN } from './helpers/build.js';
import { pollUntil, sleep } from './helpers/wait.js';

export { buildIfStale, CLIENT_BIN, RELAY_BIN, ROOT } from './helpers/build.js';

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A command's JSON output, after checking it exited 0 (its stderr is the failure message otherwise). */
export function okJson<T>(r: RunResult): T {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** Env without the caller's relay settings, so tests only see what they pass. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('TUNNEL_') && !/^(https?|no)_proxy$/i.test(k)) env[k] = v;
  }
  return { ...env, ...extra };
}

/** A started process whose output is collected as it arrives. */
export class Proc {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  /** With `umask` (e.g. 0o022) the binary runs under that umask, set by `sh -c 'umask ...; exec node ...'`. */
  constructor(bin: string, args: readonly string[], env: NodeJS.ProcessEnv, opts: { umask?: number } = {}) {
    const argv = [...NODE_FLAGS, bin, ...args];
    const [file, fileArgs] =
      opts.umask === undefined
        ? [process.execPath, argv]
        : ['/bin/sh', ['-c', `umask ${opts.umask.toString(8)}; exec "$0" "$@"`, process.execPath, ...argv]];
    this.child = spawn(file, fileArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(this.child);
    this.child.stdout!.on('data', (c: Buffer) => {
      this.stdout += c.toString();
    });
    this.child.stderr!.on('data', (c: Buffer) => {
      this.stderr += c.toString();
    });
    this.exited = new Promise((r) =>
      this.child.on('exit', (code, signal) => {
        children.delete(this.child);
        r(code ?? (signal ? 128 : null));
      }),
    );
  }

  /** Resolves once `pred` holds for the output so far; rejects on exit or after `ms`. */
  async waitFor(pred: (p: Proc) => boolean, ms: number, what: string): Promise<void> {
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    const output = () => `\nstdout:${this.stdout}\nstderr:${this.stderr}`;
    await pollUntil({
      what,
      read: () => pred(this),
      until: (ok) => ok,
      timeoutMs: ms,
      intervalMs: 50,
      abort: () => (exited ? `process exited while waiting for ${what}${output()}` : undefined),
    }).catch((err: Error) => {
      throw new Error(`${err.message}${err.message.startsWith('process exited') ? '' : output()}`);
    });
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM', ms = 10_000): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Runs a binary to completion (bounded by `ms`). */
export async function run(
  bin: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  ms = 20_000,
  opts: { umask?: number } = {},
): Promise<RunResult> {
  const p = new Proc(bin, args, env, opts);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), ms);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout, stderr: p.stderr };
}

/** A UDP port on `host` (an IPv4 address) that was free a moment ago (bound and released). */
export async function freeUdpPort(host = '127.0.0.1'): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, host, () => r()));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

export { sleep };

/** Polls `tunnel-relay cluster get NAME` (with the admin env `env`) until the relay shows it connected. */
export async function waitConnected(env: NodeJS.ProcessEnv, name: string, ms = 15_000): Promise<void> {
  await pollUntil({
    what: `${name} connected`,
    read: async () =>
      JSON.parse((await run(RELAY_BIN, ['cluster', 'get', name, '--output', 'json'], env)).stdout),
    until: (cluster: { connected?: boolean }) => cluster.connected === true,
    timeoutMs: ms,
    intervalMs: 200,
  });
}

export interface ReadyLine {
  event: 'ready';
  url: string;
  publicUrl: string;
  caPin: string;
  adminKey?: string;
}

/** Starts `tunnel-relay serve --output json` and returns it with its parsed ready line. */
/** The environment the admin commands need against a started relay: its URL, first admin key and CA pin. */
export function adminEnvOf(ready: ReadyLine): NodeJS.ProcessEnv {
  return cleanEnv({
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: ready.adminKey ?? '',
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  });
}

export async function startServe(
  dataDir: string,
  listen: string,
  extra: readonly string[] = [],
  opts: {
    umask?: number;
    env?: Record<string, string>;
    /** How long the ready line may take (20 s unless told). */
    readyTimeoutMs?: number;
  } = {},
) {
  const p = new Proc(
    RELAY_BIN,
    [
      'serve',
      '--output',
      'json',
      '--listen',
      listen,
      '--data-dir',
      dataDir,
      '--udp-port',
      'off',
      '--stun-port',
      'off',
      ...extra,
    ],
    cleanEnv(opts.env),
    { umask: opts.umask },
  );
  await p.waitFor((x) => x.stdout.includes('\n'), opts.readyTimeoutMs ?? 20_000, 'the ready line');
  const ready = JSON.parse(p.stdout.split('\n')[0]!) as ReadyLine;
  return { proc: p, ready };
}

/** Kills every process still running and removes the temporary directories. */
export async function cleanup(): Promise<void> {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** What a curl run printed and how it exited. */
export interface Curl {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function curl(args: string[], ms = 60_000): Promise<Curl> {
  return new Promise((resolve) => {
    const c = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    c.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const t = setTimeout(() => c.kill('SIGKILL'), ms);
    // 'close', not 'exit': exit can come before the last of stdout has been read.
    c.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}
