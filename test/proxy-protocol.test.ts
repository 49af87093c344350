/**
 * `serve --proxy-protocol` behind a real haproxy (Debian's, TCP mode): one haproxy sends `send-proxy-v2`, another
 * `send-proxy` (version 1), both from 127.0.0.5, the only trusted peer. Clients bind their own loopback
 * addresses (127.0.0.2, ...). The relay's audit rows and request log lines name each client, not haproxy, and
 * the per-source registration-failure limit (10 per source in 5 min) counts per client: one client limited
 * through the balancer, another still allowed through the same balancer. haproxy's health checks (which carry
 * the header too; v2 checks send LOCAL) keep the servers UP.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { type FromSourceReply, requestFrom } from './helpers/from-source.js';
import { type Haproxy, startHaproxy } from './helpers/haproxy.js';
import { serveForFile } from './helpers/served-relay.js';

const BALANCER = '127.0.0.5';
const relay = serveForFile({
  prefix: 'proxy-protocol',
  args: ['--proxy-protocol', `${BALANCER}/32`, '--log-level', 'debug'],
});
const balancers: Partial<Record<'v1' | 'v2', Haproxy>> = {};

beforeAll(async () => {
  const port = Number(new URL(relay.ready.url).port);
  for (const v of ['v1', 'v2'] as const) {
    const lb = await startHaproxy({
      servers: [{ name: 'relay', host: '127.0.0.1', port }],
      sendProxy: v,
      source: BALANCER,
    });
    balancers[v] = lb;
    await lb.waitForUp(['relay']);
  }
}, 60_000);
afterAll(async () => {
  for (const lb of Object.values(balancers)) await lb.stop();
});

function via(v: 'v1' | 'v2', from: string, method: string, path: string, token: string, body?: unknown) {
  return requestFrom({
    url: `https://127.0.0.1:${balancers[v]!.port}`,
    caPem: relay.caPem,
    localAddress: from,
    method,
    path,
    token,
    ...(body !== undefined ? { body } : {}),
  });
}

const adminKey = (): string => relay.ready.adminKey ?? '';

describe('--proxy-protocol behind haproxy', () => {
  it.each([
    ['v2', '127.0.0.2'],
    ['v1', '127.0.0.3'],
  ] as const)('with send-proxy %s the audit row and the request log name the client %s', async (v, from) => {
    const name = `via-${v}`;
    const r = await via(v, from, 'POST', '/api/v1/clusters', adminKey(), { name });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await vi.waitFor(() => expect(relay.proc.stderr).toContain(`"target":"${name}","source":"${from}"`), {
      timeout: 5_000,
    });
    expect(relay.proc.stderr).toContain(`"method":"POST","url":"/api/v1/clusters","remoteAddress":"${from}"`);
    expect(relay.proc.stderr).not.toContain(`"target":"${name}","source":"${BALANCER}"`);
  });

  it('counts registration failures per client behind the balancer, not per balancer', async () => {
    const created = await via('v2', '127.0.0.2', 'POST', '/api/v1/clusters', adminKey(), { name: 'locked' });
    expect(created.status).toBe(201);
    const register = (from: string, i: number): Promise<FromSourceReply> =>
      via('v2', from, 'POST', '/api/v1/register', `tpsk_${String(i).padStart(43, 'W')}`, {
        cluster: 'locked',
        publicKey: keyToBase64(generateKeyPair().publicKey),
        agentVersion: '0.1.0',
      });
    for (let i = 0; i < 10; i++) expect((await register('127.0.0.6', i)).status).toBe(401);
    const limited = await register('127.0.0.6', 10);
    expect(limited.status).toBe(429);
    expect(limited.body.error.message).toContain('source 127.0.0.6');
    // Another client through the same haproxy is not limited: its wrong PSK is a plain 401.
    expect((await register('127.0.0.7', 11)).status).toBe(401);
  });

  it('counts the headers it read by version on /metrics', async () => {
    const r = await requestFrom({
      url: relay.ready.url,
      caPem: relay.caPem,
      localAddress: '127.0.0.1',
      method: 'GET',
      path: '/metrics',
      token: adminKey(),
    });
    const text = String(r.body);
    for (const v of ['1', '2']) {
      const m = new RegExp(`tunnel_relay_proxy_protocol_headers_total\\{version="${v}"\\} (\\d+)`).exec(text);
      expect(Number(m?.[1])).toBeGreaterThan(0);
    }
  });
});
