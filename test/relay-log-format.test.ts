/**
 * The relay's log lines through the real `tunnel-relay serve`: on a terminal (a pty from script(1)) they are pretty,
 * one readable line per event; not on a terminal they are JSON; `--log-format` decides either way, and a bad value
 * stops the start naming the flag. Requests are logged at debug, not at info.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import {
  buildIfStale,
  cleanEnv,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { waitFor } from './helpers/wait.js';

beforeAll(() => buildIfStale(), 180_000);
afterAll(cleanup);

/** Every process below `pid`, from /proc. */
function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(RELAY_BIN);
  } catch {
    return false;
  }
}

const PRETTY = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/;

async function healthz(ready: { url: string }, dataDir: string): Promise<void> {
  const r = await curl(['-sS', '--cacert', join(dataDir, 'tls', 'cert.pem'), `${ready.url}/healthz`]);
  expect(r.stderr).toBe('');
}

/** `p`'s stderr lines, after a moment for the last log lines to arrive. */
async function settle(p: Proc): Promise<string[]> {
  await new Promise((r) => setTimeout(r, 300));
  return p.stderr.split('\n').filter(Boolean);
}

describe('relay log format', () => {
  it('not on a terminal: JSON lines; requests only at debug', async () => {
    const dataDir = join(tempDir('log-json-'), 'd');
    const { proc, ready } = await startServe(dataDir, '127.0.0.1:0');
    try {
      await healthz(ready, dataDir);
      const lines = await settle(proc);
      const records = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
      expect(records.some((r) => r.msg === 'relay listening' && r.level === 30)).toBe(true);
      expect(records.filter((r) => /request/.test(r.msg))).toEqual([]);
    } finally {
      await proc.stop();
    }
    const debug = await startServe(dataDir, '127.0.0.1:0', ['--log-level', 'debug']);
    try {
      await healthz(debug.ready, dataDir);
      const records = (await settle(debug.proc)).map((l) => JSON.parse(l) as { level: number; msg: string });
      const perRequest = records.filter((r) => r.msg === 'incoming request' || r.msg === 'request completed');
      expect(perRequest.map((r) => r.level)).toEqual([20, 20]);
    } finally {
      await debug.proc.stop();
    }
  }, 60_000);

  it('--log-format pretty: one readable line per event, never JSON', async () => {
    const dataDir = join(tempDir('log-pretty-'), 'd');
    const { proc, ready } = await startServe(dataDir, '127.0.0.1:0', ['--log-format', 'pretty']);
    try {
      await healthz(ready, dataDir);
      const lines = await settle(proc);
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l).toMatch(PRETTY);
      expect(lines.some((l) => l.includes(`INFO  relay listening url=${ready.url}`))).toBe(true);
      expect(lines.filter((l) => /request/.test(l))).toEqual([]);
    } finally {
      await proc.stop();
    }
  }, 60_000);

  it('on a terminal: pretty by default, JSON with --log-format json', async () => {
    const dataDir = join(tempDir('log-tty-'), 'd');
    const onPty = async (extra: string): Promise<string> => {
      // script(1) runs serve on a pseudo-terminal; serve gets SIGTERM once it logged that it listens.
      const cmd = `'${process.execPath}' ${NODE_FLAGS.join(' ')} '${RELAY_BIN}' serve --data-dir '${dataDir}' --listen 127.0.0.1:0 --udp-port off --stun-port off ${extra}`;
      const p = spawn('script', ['-qefc', cmd, '/dev/null'], {
        env: cleanEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      p.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      const listening = () => /relay listening/.test(out.split('\n').slice(1).join('\n'));
      await waitFor(listening, 20_000, 'relay listening', 100);
      // SIGTERM to serve itself: the node process among script's descendants.
      for (const pid of descendants(p.pid ?? 0)) if (isNode(pid)) process.kill(pid, 'SIGTERM');
      await new Promise((r) => p.on('close', r));
      return out.replace(/\r/g, '');
    };
    const pretty = await onPty('');
    expect(pretty).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO {2}relay listening url=https:\/\/127\.0\.0\.1:\d+/m,
    );
    expect(pretty).not.toMatch(/^\{"level"/m);
    const json = await onPty('--log-format json');
    expect(json).toMatch(/^\{"level":30,.*"msg":"relay listening"/m);
  }, 90_000);

  it('a bad --log-format stops the start naming the flag', async () => {
    const r = await run(
      RELAY_BIN,
      ['serve', '--data-dir', join(tempDir('log-bad-'), 'd'), '--log-format', 'yaml'],
      cleanEnv(),
    );
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'error BAD_CONFIG: log-format (--log-format): expected json or pretty, got "yaml"',
    );
  });
});
