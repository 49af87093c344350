/**
 * Attack replay against the replica mesh: two real `tunnel-relay serve` replicas (A, B) of one fleet on a
 * throw-away PostgreSQL, a real agent connected to A in front of an upstream that counts every request. An
 * anonymous client sends hub requests (CONNECT, path proxy, Upgrade) to both replicas carrying forged
 * `tunnel-mesh-key` headers: random values, empty, doubled, the right length with wrong bytes, the raw key
 * instead of its base64. Every one is refused with 403 MESH_UNAUTHENTICATED and counted; the real mesh key alone,
 * without an access key, gets 401/407; a client request without a credential is never forwarded. The upstream
 * sees none of it. The same forged headers on every other route (the API beside a valid admin key, the values YAML,
 * the console, a probe, `/derp`) are refused and counted the same; the fleet's own key is served there (as a
 * relay-mode replica forwards); a relay without a mesh key refuses the header whatever its value.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  cleanup,
  type Proc,
  RELAY_BIN,
  run,
  tempDir,
  waitConnected,
} from '../cli-harness.js';
import { cleanupAll } from '../helpers/cleanup.js';
import { startJoinedAgent } from '../helpers/joined-agent.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from '../helpers/replica-fleet.js';
import { listen } from '../proxy-fixtures.js';
import { serve } from './relay-fixture.js';
import { abuseRuns } from './scale.js';

const CLUSTER = 'mesh-target';
let fleet: ReplicaFleet;
let replicas: Replica[] = [];
let agent: Proc;
let upstream: http.Server;
let upstreamPort: number;
let upstreamHits = 0;
let meshKeyText: string;

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('abuse-mesh');
  meshKeyText = readFileSync(fleet.files.meshKeyFile, 'utf8').trim();
  upstream = http.createServer((req, res) => {
    // The agent asks its upstream for the cluster's facts itself (tunnel-client/dialer/cluster-facts.ts): not
    // a request the relay forwarded.
    if (req.url === '/version' || req.url?.startsWith('/api/v1/nodes')) return void res.writeHead(404).end();
    upstreamHits++;
    res.end('reached the upstream');
  });
  upstream.on('upgrade', (_req, socket) => {
    upstreamHits++;
    socket.destroy();
  });
  upstreamPort = await listen(upstream);
  for (let i = 0; i < 2; i++) await fleet.startReplica();
  replicas = fleet.replicas;
  const [a] = replicas;
  const adminKey = fleet.adminKey();
  const created = await run(
    RELAY_BIN,
    ['cluster', 'create', CLUSTER, '--output', 'json'],
    adminEnvOf(a!.ready),
  );
  expect(created.code, created.stderr).toBe(0);
  agent = await startJoinedAgent({
    relayUrl: a!.ready.url,
    cluster: CLUSTER,
    psk: JSON.parse(created.stdout).bootstrap.psk,
    caPin: fleet.files.caPin,
    upstream: `http://127.0.0.1:${upstreamPort}`,
    prefix: 'abuse-mesh-agent',
  });
  await waitConnected(adminEnvOf({ ...a!.ready, adminKey }), CLUSTER, 20_000);
}, 180_000);

afterAll(async () => {
  await agent?.stop('SIGTERM');
  await fleet?.stop();
  replicas = [];
  upstream?.close();
  await cleanup();
  await cleanupAll();
});

/** Sends `text` on a fresh TLS connection to `url` and returns the status line of the answer. */
function statusOf(url: string, text: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({
      host: u.hostname,
      port: Number(u.port),
      ca: fleet.files.caPem,
      servername: 'localhost',
    });
    let got = '';
    const timer = setTimeout(
      () => s.destroy(new Error(`no answer to ${JSON.stringify(text.slice(0, 60))}`)),
      10_000,
    );
    s.on('secureConnect', () => s.write(text));
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
    s.on('error', reject);
  });
}

function requestsWith(headerLines: string): string[] {
  return [
    `CONNECT ${CLUSTER}.clusters.local:${upstreamPort} HTTP/1.1\r\nhost: x\r\n${headerLines}connection: close\r\n\r\n`,
    `GET /api/v1/clusters/${CLUSTER}/proxy/ HTTP/1.1\r\nhost: x\r\n${headerLines}connection: close\r\n\r\n`,
    `GET /api/v1/clusters/${CLUSTER}/proxy/ws HTTP/1.1\r\nhost: x\r\n${headerLines}connection: Upgrade\r\nupgrade: websocket\r\n\r\n`,
  ];
}

/** Header values an attacker may try (none is the fleet's base64 mesh key). */
const forged = fc.oneof(
  fc.constant(''),
  fc.stringMatching(/^[A-Za-z0-9+/=]{1,120}$/),
  fc.uint8Array({ minLength: 48, maxLength: 48 }).map((b) => Buffer.from(b).toString('base64')),
  fc.constant('raw'),
);

/** The head of the answer to `text` (up to its blank line), then the connection is dropped (an upgrade stays open). */
function headOf(
  url: string,
  text: string,
  tls: { ca: string } | { rejectUnauthorized: false },
): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: u.hostname, port: Number(u.port), servername: 'localhost', ...tls });
    let got = '';
    const timer = setTimeout(
      () => s.destroy(new Error(`no answer head to ${text.split('\r\n')[0]}`)),
      10_000,
    );
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(got.slice(0, got.indexOf('\r\n\r\n') + 4) || got);
    };
    s.on('secureConnect', () => s.write(text));
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) done();
    });
    s.on('close', done);
    s.on('error', reject);
  });
}

/** Requests to routes other than the hub proxies, each beside `headerLines` (and an admin key where it matters). */
function otherRoutesWith(headerLines: string, adminKey: string): Record<string, string> {
  const auth = `authorization: Bearer ${adminKey}\r\n`;
  const get = (path: string, extra = '') =>
    `GET ${path} HTTP/1.1\r\nhost: x\r\n${extra}${headerLines}connection: close\r\n\r\n`;
  return {
    'API with an admin key': get('/api/v1/clusters', auth),
    'values YAML': get(`/clusters/${CLUSTER}?source=cluster-annotation`, auth),
    register: `POST /api/v1/register HTTP/1.1\r\nhost: x\r\n${headerLines}content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
    console: get('/ui/'),
    probe: get('/healthz'),
    derp: `GET /derp HTTP/1.1\r\nhost: x\r\n${headerLines}connection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${randomBytes(16).toString('base64')}\r\nsec-websocket-protocol: derp\r\n\r\n`,
  };
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

async function metricsOf(url: string): Promise<string> {
  const u = new URL('/metrics', url);
  const answer = await statusOf(url, `GET ${u.pathname} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
  return answer.slice(answer.indexOf('\r\n\r\n') + 4);
}

describe('forged mesh headers from an anonymous client', () => {
  it('are refused with 403 MESH_UNAUTHENTICATED on every replica, counted, and never reach the agent', async () => {
    const refusedBefore = await Promise.all(
      replicas.map(async (r) =>
        metric(await metricsOf(r.ready.url), 'tunnel_relay_mesh_requests_total{result="refused"}'),
      ),
    );
    let sent = [0, 0];
    await fc.assert(
      fc.asyncProperty(forged, fc.boolean(), fc.nat(1), async (value, doubled, which) => {
        const header = value === 'raw' ? meshKeyText : value;
        const line = `tunnel-mesh-key: ${header}\r\n`;
        for (const text of requestsWith(doubled ? line + line : line)) {
          const answer = await statusOf(replicas[which]!.ready.url, text);
          expect(answer).toMatch(/^HTTP\/1\.1 403 /);
          expect(answer).toContain('MESH_UNAUTHENTICATED');
          sent = sent.map((n, i) => (i === which ? n + 1 : n));
        }
      }),
      { numRuns: abuseRuns(8) },
    );
    const refusedAfter = await Promise.all(
      replicas.map(async (r) =>
        metric(await metricsOf(r.ready.url), 'tunnel_relay_mesh_requests_total{result="refused"}'),
      ),
    );
    expect(refusedAfter.map((n, i) => n - refusedBefore[i]!)).toEqual(sent);
    expect(upstreamHits).toBe(0);
  });

  it('are refused on every other route too (API, values, console, probes, /derp), even beside a valid access key', async () => {
    const refused = 'tunnel_relay_mesh_requests_total{result="refused"}';
    const before = await Promise.all(
      replicas.map(async (r) => metric(await metricsOf(r.ready.url), refused)),
    );
    const sent = replicas.map(() => 0);
    await fc.assert(
      fc.asyncProperty(forged, fc.nat(1), async (value, which) => {
        const header = value === 'raw' ? meshKeyText : value;
        const requests = otherRoutesWith(`tunnel-mesh-key: ${header}\r\n`, fleet.adminKey());
        for (const [what, text] of Object.entries(requests)) {
          const answer = await headOf(replicas[which]!.ready.url, text, { ca: fleet.files.caPem });
          expect(answer, what).toMatch(/^HTTP\/1\.1 403 /);
          sent[which]!++;
        }
      }),
      { numRuns: abuseRuns(4) },
    );
    const after = await Promise.all(replicas.map(async (r) => metric(await metricsOf(r.ready.url), refused)));
    expect(after.map((n, i) => n - before[i]!)).toEqual(sent);
    // The bodies name the code (one of each, with a body to read).
    const api = await statusOf(
      replicas[0]!.ready.url,
      otherRoutesWith('tunnel-mesh-key: forged\r\n', fleet.adminKey())['API with an admin key']!,
    );
    expect(api).toContain('MESH_UNAUTHENTICATED');
  });

  it("the fleet's own mesh key (as a relay-mode replica sends it) is served on those routes and /derp", async () => {
    const meshHeader = `tunnel-mesh-key: ${Buffer.from(meshKeyText, 'latin1').toString('base64')}\r\n`;
    const requests = otherRoutesWith(meshHeader, fleet.adminKey());
    const answers: Record<string, string> = {};
    for (const [what, text] of Object.entries(requests)) {
      const head = await headOf(replicas[0]!.ready.url, text, { ca: fleet.files.caPem });
      answers[what] = head.slice(0, head.indexOf('\r\n'));
    }
    expect(answers).toEqual({
      'API with an admin key': 'HTTP/1.1 200 OK',
      'values YAML': 'HTTP/1.1 200 OK',
      register: 'HTTP/1.1 400 Bad Request',
      console: 'HTTP/1.1 200 OK',
      probe: 'HTTP/1.1 200 OK',
      derp: 'HTTP/1.1 101 Switching Protocols',
    });
  });

  it('a relay without a mesh key refuses the header on every route, whatever its value', async () => {
    const meshless = await serve(tempDir('abuse-mesh-none-'));
    try {
      for (const value of ['', 'forged', Buffer.from(meshKeyText, 'latin1').toString('base64')]) {
        const requests = otherRoutesWith(`tunnel-mesh-key: ${value}\r\n`, meshless.adminKey);
        for (const [what, text] of Object.entries(requests)) {
          const answer = await headOf(meshless.ready.url, text, { rejectUnauthorized: false });
          expect(answer, what).toMatch(/^HTTP\/1\.1 403 /);
        }
      }
      // Without the header the same requests are answered as usual (clients never send it).
      const plain = otherRoutesWith('', meshless.adminKey);
      const api = await headOf(meshless.ready.url, plain['API with an admin key']!, {
        rejectUnauthorized: false,
      });
      expect(api).toMatch(/^HTTP\/1\.1 200 /);
      const derp = await headOf(meshless.ready.url, plain.derp!, { rejectUnauthorized: false });
      expect(derp).toMatch(/^HTTP\/1\.1 101 /);
    } finally {
      await meshless.proc.stop();
    }
  });

  it('the real mesh key without an access key gets 401/407, and nothing is forwarded', async () => {
    const meshHeader = `tunnel-mesh-key: ${Buffer.from(meshKeyText, 'latin1').toString('base64')}\r\n`;
    for (const r of replicas) {
      const [connectAnswer, pathAnswer, upgradeAnswer] = await Promise.all(
        requestsWith(meshHeader).map((t) => statusOf(r.ready.url, t)),
      );
      expect(connectAnswer).toMatch(/^HTTP\/1\.1 407 /);
      expect(pathAnswer).toMatch(/^HTTP\/1\.1 401 /);
      expect(upgradeAnswer).toMatch(/^HTTP\/1\.1 401 /);
      const bogus = `proxy-authorization: Bearer trk_${randomBytes(24).toString('hex')}\r\n`;
      expect(await statusOf(r.ready.url, requestsWith(meshHeader + bogus)[0]!)).toMatch(/^HTTP\/1\.1 407 /);
    }
    // B holds no session of the agent: an anonymous request there is refused before any mesh hop.
    const b = replicas[1]!;
    for (const text of requestsWith(''))
      expect(await statusOf(b.ready.url, text)).toMatch(/^HTTP\/1\.1 40[17] /);
    const forwarded = await metricsOf(b.ready.url);
    for (const kind of ['connect', 'upgrade', 'request']) {
      expect(metric(forwarded, `tunnel_relay_mesh_forwarded_total{kind="${kind}"}`)).toBe(0);
    }
    expect(upstreamHits).toBe(0);
  });
});
