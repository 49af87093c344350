/**
 * First start with a taken port, through the real `tunnel-relay serve`: whichever port is taken (the TLS listen port,
 * `--udp-port`, `--stun-port`), serve exits 2 naming the flag and the port and saying what to do, before it writes
 * anything: the data dir is left as it was (absent, or empty), so the next start, with the port free, issues and
 * prints the admin key.
 */
import dgram from 'node:dgram';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanEnv, cleanup, RELAY_BIN, run, startServe, tempDir } from './cli-harness.js';

beforeAll(() => buildIfStale(), 180_000);
afterAll(cleanup);

async function takeTcp(): Promise<{ port: number; free: () => Promise<void> }> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const addr = s.address();
  if (addr === null || typeof addr === 'string') throw new Error('no TCP address');
  return { port: addr.port, free: () => new Promise<void>((r) => s.close(() => r())) };
}

async function takeUdp(): Promise<{ port: number; free: () => Promise<void> }> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return { port: s.address().port, free: () => new Promise<void>((r) => s.close(() => r())) };
}

const cases = [
  {
    what: 'the TLS listen port',
    take: takeTcp,
    args: (port: number) => ['--listen', `127.0.0.1:${port}`, '--udp-port', 'off', '--stun-port', 'off'],
    message: (port: number) =>
      `error BAD_CONFIG: listen: cannot bind 127.0.0.1:${port} (EADDRINUSE): another process holds this port; ` +
      'stop it or choose another with --listen',
  },
  {
    what: '--udp-port',
    take: takeUdp,
    args: (port: number) => ['--listen', '127.0.0.1:0', '--udp-port', String(port), '--stun-port', 'off'],
    message: (port: number) =>
      `error BAD_CONFIG: --udp-port: cannot bind 127.0.0.1:${port} on UDP (EADDRINUSE): another process holds ` +
      'this port; stop it or choose another with --udp-port (or --udp-port off)',
  },
  {
    what: '--stun-port',
    take: takeUdp,
    args: (port: number) => ['--listen', '127.0.0.1:0', '--udp-port', 'off', '--stun-port', String(port)],
    message: (port: number) =>
      `error BAD_CONFIG: stun-port: cannot bind udp 127.0.0.1:${port} (EADDRINUSE): another process holds ` +
      'this port; stop it or choose another with --stun-port (or --stun-port off)',
  },
];

describe('first start with a taken port', () => {
  for (const c of cases) {
    it(`${c.what}: exit 2 with the data dir untouched; the next start issues the admin key`, async () => {
      const base = tempDir('first-start-');
      const absent = join(base, 'absent');
      const empty = join(base, 'empty');
      mkdirSync(empty);
      const held = await c.take();
      try {
        for (const dir of [absent, empty]) {
          const r = await run(RELAY_BIN, ['serve', '--data-dir', dir, ...c.args(held.port)], cleanEnv());
          expect(r.code, r.stderr).toBe(2);
          expect(r.stderr.trim()).toBe(c.message(held.port));
          expect(r.stdout).not.toContain('admin access key');
        }
        expect(existsSync(absent)).toBe(false);
        expect(readdirSync(empty)).toEqual([]);
      } finally {
        await held.free();
      }
      // The same flags, the port now free (later flags win over startServe's own).
      const { proc, ready } = await startServe(empty, '127.0.0.1:0', c.args(held.port));
      try {
        expect(ready.adminKey).toMatch(/^trk_/);
      } finally {
        await proc.stop();
      }
    }, 60_000);
  }
});
