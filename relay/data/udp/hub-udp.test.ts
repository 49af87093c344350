/**
 * The hub's UDP port in a real relay (startRelay): a busy port fails the start with BAD_CONFIG naming
 * --udp-port before anything is issued (the admin key is issued by the next start); the register reply
 * advertises the port only while the hub (the data plane) listens on it, as the public URL's host and the
 * bound port, or as --udp-public-endpoint.
 */
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../../shared/keys.js';
import { startTestRelay, type TestRelay } from '../../../test/helpers/test-relay.js';
import { hubProxyPlugin } from '../proxy/proxy-plugin.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function heldUdpPort(): Promise<{ port: number; release(): Promise<void> }> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return { port: s.address().port, release: () => new Promise<void>((r) => s.close(() => r())) };
}

async function registeredTunnel(t: TestRelay, name: string) {
  const adminKey = t.relay.adminKey ?? '';
  const created = await t.call('POST', '/api/v1/clusters', { token: adminKey, body: { name } });
  expect(created.status).toBe(201);
  const r = await t.call('POST', '/api/v1/register', {
    token: created.body.bootstrap.psk,
    body: { cluster: name, publicKey: generateKeyPair().publicKey.toString('base64'), agentVersion: 'x' },
  });
  expect(r.status).toBe(201);
  return r.body.tunnel;
}

describe('the hub UDP port of a relay', () => {
  it('a busy --udp-port is BAD_CONFIG naming the flag, and nothing was issued', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hub-udp-busy-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const held = await heldUdpPort();
    await expect(startTestRelay({ dir, flags: { udpPort: String(held.port) } })).rejects.toMatchObject({
      code: 'BAD_CONFIG',
      message: expect.stringMatching(
        new RegExp(`^--udp-port: cannot bind 127\\.0\\.0\\.1:${held.port} .*EADDRINUSE`),
      ),
    });
    await held.release();
    const t = await startTestRelay({ dir, flags: { udpPort: String(held.port) } });
    cleanups.push(() => t.cleanup());
    expect(t.relay.adminKey).toMatch(/\S{20,}/); // the first admin key comes from this start
  });

  it('advertises the port only while the hub listens on it', async () => {
    const { port, release } = await heldUdpPort();
    await release();
    const bare = await startTestRelay({ flags: { udpPort: String(port) } });
    cleanups.push(() => bare.cleanup());
    expect((await registeredTunnel(bare, 'no-hub')).udpEndpoint).toBeNull();
    await bare.cleanup();
    cleanups.pop();

    const t = await startTestRelay({ flags: { udpPort: String(port) }, plugins: [hubProxyPlugin()] });
    cleanups.push(() => t.cleanup());
    expect((await registeredTunnel(t, 'with-hub')).udpEndpoint).toBe(`127.0.0.1:${port}`);
  });

  it('advertises --udp-public-endpoint instead when given', async () => {
    const t = await startTestRelay({
      flags: { udpPort: '0', udpPublicEndpoint: 'wg.example.net:4500' },
      plugins: [hubProxyPlugin()],
    });
    cleanups.push(() => t.cleanup());
    expect((await registeredTunnel(t, 'public')).udpEndpoint).toBe('wg.example.net:4500');
  });
});
