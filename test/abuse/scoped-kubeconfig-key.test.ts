/**
 * Abuse replay: a kubeconfig leaks. Its key (minted by POST /api/v1/clusters/:name/kubeconfig, role
 * `cluster-proxy:edge`) must reach edge's path proxy and nothing else: not another cluster's proxy, not
 * CONNECT (even to its own cluster), not a single API route (no cluster reads, no minting further keys, no
 * token list, no values), and not after it is revoked. Through the real `tunnel-relay serve` process and
 * real `tunnel-client` agents.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTunnel, listen } from '../proxy-fixtures.js';
import { type RelayWithAgent, startRelayWithAgents } from './relay-agent.js';
import { abuseRuns } from './scale.js';

let relay: RelayWithAgent;
let upstream: http.Server;
let upPort: number;

beforeAll(async () => {
  upstream = http.createServer((_req, res) => res.end('upstream'));
  upPort = await listen(upstream);
  relay = await startRelayWithAgents({
    agents: [{ cluster: 'edge' }, { cluster: 'edge-other' }],
    upstream: `http://127.0.0.1:${upPort}`,
  });
}, 90_000);

afterAll(async () => {
  await relay?.stop();
  upstream?.closeAllConnections();
  upstream?.close();
});

async function mint(): Promise<{ keyId: string; token: string }> {
  const r = await relay.api('POST', '/api/v1/clusters/edge/kubeconfig', { body: { ttl: '1h' } });
  expect(r.status).toBe(201);
  return { keyId: r.body.keyId, token: r.body.kubeconfig.users[0].user.token };
}

/** Every API route, with a body where it takes one; the scoped key must not get a 2xx from any. */
const ROUTES: Array<[string, string, unknown?]> = [
  ['GET', '/api/v1/clusters'],
  ['POST', '/api/v1/clusters', { name: 'by-leak', group: 'default' }],
  ['GET', '/api/v1/clusters/edge'],
  ['DELETE', '/api/v1/clusters/edge-other'],
  ['POST', '/api/v1/clusters/edge/accept'],
  ['POST', '/api/v1/clusters/edge/deny'],
  ['POST', '/api/v1/clusters/edge/rotate-psk', {}],
  ['POST', '/api/v1/clusters/edge/kubeconfig', {}],
  ['POST', '/api/v1/clusters/edge-other/kubeconfig', {}],
  ['GET', '/api/v1/clusters/edge/values'],
  ['PUT', '/api/v1/clusters/edge/values', { a: 1 }],
  ['GET', '/clusters/edge'],
  ['GET', '/api/v1/tokens'],
  ['POST', '/api/v1/tokens', { role: 'admin' }],
  ['DELETE', '/api/v1/tokens/k_0000000000000000'],
  ['GET', '/api/v1/audit'],
  ['GET', '/api/v1/values'],
  ['PUT', '/api/v1/values', { a: 1 }],
  ['GET', '/api/v1/rate-limits'],
  ['DELETE', '/api/v1/rate-limits?all=true'],
  ['GET', '/api/v1/agent'],
];

describe('a leaked kubeconfig key', () => {
  it('reaches its own cluster through the path proxy and nothing else', async () => {
    for (let run = 0; run < abuseRuns(1); run++) {
      const { token } = await mint();
      const own = await relay.api('GET', '/api/v1/clusters/edge/proxy/x', { token });
      expect(own.status).toBe(200);
      const other = await relay.api('GET', '/api/v1/clusters/edge-other/proxy/x', { token });
      expect({ status: other.status, kind: other.body.kind }).toEqual({ status: 404, kind: 'Status' });
      for (const [method, path, body] of ROUTES) {
        const r = await relay.api(method, path, { token, ...(body === undefined ? {} : { body }) });
        expect({ method, path, refused: r.status >= 400 && r.status < 500 }).toEqual({
          method,
          path,
          refused: true,
        });
      }
      for (const cluster of ['edge', 'edge-other']) {
        const tunnel = connectTunnel(relay.url, relay.ca, `${cluster}.clusters.local:${upPort}`, token);
        await expect(tunnel).rejects.toThrow(/^HTTP\/1\.1 404/);
      }
    }
    const list = await relay.api('GET', '/api/v1/clusters');
    expect(list.body.items.map((c: { name: string }) => c.name).sort()).toEqual(['edge', 'edge-other']);
  });

  it('stops working once revoked', async () => {
    for (let run = 0; run < abuseRuns(1); run++) {
      const { keyId, token } = await mint();
      expect((await relay.api('GET', '/api/v1/clusters/edge/proxy/x', { token })).status).toBe(200);
      expect((await relay.api('DELETE', `/api/v1/tokens/${keyId}`)).status).toBe(200);
      const after = await relay.api('GET', '/api/v1/clusters/edge/proxy/x', { token });
      expect({ status: after.status, reason: after.body.reason }).toEqual({
        status: 401,
        reason: 'Unauthorized',
      });
    }
  });
});
