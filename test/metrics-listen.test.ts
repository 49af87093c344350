/**
 * `tunnel-relay serve --metrics-listen HOST:PORT` through the real binary and curl: /metrics is served there alone,
 * over plain HTTP, and the TLS port answers it 404; without the flag the TLS port serves it (unauthenticated). A start
 * whose ports are taken names every taken one in one error (exit 2), not the first only.
 */
import dgram from 'node:dgram';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanEnv, cleanup, curl, RELAY_BIN, run, startServe, tempDir } from './cli-harness.js';

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

const status = async (url: string, extra: string[] = []) =>
  (await curl(['-sS', '-k', '-o', '/dev/null', '-w', '%{http_code}', ...extra, url])).stdout;

describe('--metrics-listen', () => {
  it('serves /metrics on its own plain-HTTP port; the TLS port no longer does', async () => {
    const free = await takeTcp();
    await free.free();
    const { proc, ready } = await startServe(join(tempDir('metrics-listen-'), 'relay'), '127.0.0.1:0', [
      '--metrics-listen',
      `127.0.0.1:${free.port}`,
    ]);
    try {
      const scraped = await curl(['-sS', '-f', `http://127.0.0.1:${free.port}/metrics`]);
      expect(scraped.code, scraped.stderr).toBe(0);
      expect(scraped.stdout).toContain('tunnel_relay_clusters');
      expect(scraped.stdout).toContain('process_resident_memory_bytes');
      expect(await status(`http://127.0.0.1:${free.port}/healthz`)).toBe('404');
      expect(await status(`${ready.url}/metrics`)).toBe('404');
      expect(await status(`${ready.url}/healthz`)).toBe('200');
      expect(proc.stderr).toContain(`"metricsUrl":"http://127.0.0.1:${free.port}/metrics"`);
    } finally {
      await proc.stop();
    }
  }, 60_000);

  it('without it, the TLS port serves /metrics to anyone', async () => {
    const { proc, ready } = await startServe(join(tempDir('metrics-main-'), 'relay'), '127.0.0.1:0');
    try {
      expect(await status(`${ready.url}/metrics`)).toBe('200');
    } finally {
      await proc.stop();
    }
  }, 60_000);

  it('a start with several taken ports names them all in one error', async () => {
    const [tls, metrics, udp] = [await takeTcp(), await takeTcp(), await takeUdp()];
    try {
      const dir = join(tempDir('metrics-taken-'), 'relay');
      const args = ['serve', '--data-dir', dir, '--listen', `127.0.0.1:${tls.port}`];
      args.push(
        '--metrics-listen',
        `127.0.0.1:${metrics.port}`,
        '--udp-port',
        String(udp.port),
        '--stun-port',
        'off',
      );
      const r = await run(RELAY_BIN, args, cleanEnv());
      expect(r.code, r.stderr).toBe(2);
      const line = r.stderr.trim();
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toMatch(/^error BAD_CONFIG: /);
      expect(line).toContain(`listen: cannot bind 127.0.0.1:${tls.port} (EADDRINUSE)`);
      expect(line).toContain(`metrics-listen: cannot bind 127.0.0.1:${metrics.port} (EADDRINUSE)`);
      expect(line).toContain(`--udp-port: cannot bind 127.0.0.1:${udp.port} on UDP (EADDRINUSE)`);
    } finally {
      for (const p of [tls, metrics, udp]) await p.free();
    }
  }, 60_000);
});
