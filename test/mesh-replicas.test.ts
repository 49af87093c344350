/**
 * The replica mesh with real processes: two `tunnel-relay serve` replicas (A, B) on one throw-away PostgreSQL,
 * sharing a hub key, a TLS certificate and a mesh key; an agent (`tunnel-client join` + `run`) connected to A.
 * Hub requests sent to B reach the agent through A, byte for byte: a CONNECT download, a path-proxy GET and an
 * Upgrade. A mesh request with a wrong or empty mesh key is refused and counted; a replica started with another
 * hub key or certificate refuses to start; `cluster get` on B shows the agent connected.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import {
  adminEnvOf,
  buildIfStale,
  cleanEnv,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  run,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { startJoinedAgent } from './helpers/joined-agent.js';
import { fleetServeArgs } from './helpers/relay-fleet.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { listen, sampleHandler, sha256OfPattern } from './proxy-fixtures.js';

let fleet: ReplicaFleet;
let a: Replica;
let b: Replica;
let adminKey: string;
let upstream: http.Server;
let upstreamPort: number;
let agent: Proc;
const CLUSTER = 'edge-mesh';

/** The upstream answers Upgrade requests with 101 and then echoes every byte back. */
function echoOnUpgrade(s: http.Server): void {
  s.on('upgrade', (_req, socket, head) => {
    socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: echo\r\n\r\n');
    if (head.length > 0) socket.write(head);
    socket.pipe(socket);
  });
}

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('mesh');
  upstream = http.createServer(sampleHandler('mesh-upstream'));
  echoOnUpgrade(upstream);
  upstreamPort = await listen(upstream);
  a = await fleet.startReplica();
  b = await fleet.startReplica();
  adminKey = fleet.adminKey();
  // The cluster is made on B; the agent joins and connects through A.
  const adminB = adminEnvOf({ ...b.ready, adminKey });
  const created = await run(RELAY_BIN, ['cluster', 'create', CLUSTER, '--output', 'json'], adminB);
  expect(created.code, created.stderr).toBe(0);
  agent = await startJoinedAgent({
    relayUrl: a.ready.url,
    cluster: CLUSTER,
    psk: JSON.parse(created.stdout).bootstrap.psk as string,
    caPin: fleet.files.caPin,
    upstream: `http://127.0.0.1:${upstreamPort}`,
    prefix: 'mesh-agent',
    // No UDP: the agent's own reason (443-only, from its lease) shows on every replica.
    joinArgs: ['--egress', '443-only'],
  });
  await waitConnected(adminEnvOf({ ...a.ready, adminKey }), CLUSTER, 20_000);
}, 180_000);

afterAll(async () => {
  await agent?.stop('SIGTERM');
  await fleet?.stop();
  upstream?.close();
  await cleanup();
  await cleanupAll();
});

const caFile = () => fleet.files.tlsCert;

/** curl through replica `r` as a CONNECT proxy, with the admin key. */
const viaProxy = (r: Replica) => [
  '-sS',
  '-p',
  '-x',
  r.ready.url,
  '--proxy-cacert',
  caFile(),
  '--proxy-header',
  `Proxy-Authorization: Bearer ${adminKey}`,
];

async function sha256Of(args: string[]): Promise<{ code: number | null; bytes: number; sha: string }> {
  const h = createHash('sha256');
  let bytes = 0;
  const code = await new Promise<number | null>((resolve) => {
    const c = spawn('curl', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    c.stdout.on('data', (d: Buffer) => {
      bytes += d.length;
      h.update(d);
    });
    const t = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('close', (cd) => {
      clearTimeout(t);
      resolve(cd);
    });
  });
  return { code, bytes, sha: h.digest('hex') };
}

/** A raw request on a TLS connection to `r`; resolves with everything read until `until` matches or the end. */
function rawExchange(r: Replica, text: string, until: RegExp = /$^/): Promise<string> {
  const u = new URL(r.ready.url);
  return new Promise((resolve, reject) => {
    const s = connect({
      host: u.hostname,
      port: Number(u.port),
      ca: fleet.files.caPem,
      servername: 'localhost',
    });
    let got = '';
    const t = setTimeout(() => {
      s.destroy();
      resolve(got);
    }, 10_000);
    s.on('secureConnect', () => s.write(text));
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (until.test(got)) {
        clearTimeout(t);
        s.destroy();
        resolve(got);
      }
    });
    s.on('end', () => {
      clearTimeout(t);
      resolve(got);
    });
    s.on('error', reject);
  });
}

/** GET PATH from replica `r` with the admin key: the body. */
function getText(r: Replica, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, r.ready.url),
      { ca: fleet.files.caPem, headers: { authorization: `Bearer ${adminKey}` } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve(text));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const metrics = (r: Replica) => getText(r, '/metrics');

const sample = (text: string, name: string): number => {
  const m = new RegExp(`^${name.replace(/[{}"=]/g, (c) => `\\${c}`)} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
};

describe('a fleet of two replicas with the mesh on', () => {
  it("cluster get on B shows the agent connected to A, with A's path details", async () => {
    await vi.waitFor(
      async () => {
        const r = await run(
          RELAY_BIN,
          ['cluster', 'get', CLUSTER, '--output', 'json'],
          adminEnvOf({ ...b.ready, adminKey }),
        );
        expect(r.code, r.stderr).toBe(0);
        const c = JSON.parse(r.stdout);
        expect(c.connected).toBe(true);
        expect(c.path).toBe('relayed');
        // A writes its view of the agent's path; B shows it (the same on every replica). Its RTTs may still be
        // null: an idle agent's path is pinged at keepalive pace (25 s).
        expect(c.pathDetail).not.toBeNull();
        expect(c.pathDetail.remote).toBeNull();
        // The agent renewed its lease through A; B reads the reason from the store.
        expect(c.pathDetail.reason).toBe('443-only');
        expect(c.pathDetail.reasonFrom).toBe('agent');
      },
      { timeout: 20_000, interval: 250 },
    );
    // Its path history and the reason gauge are the same on both replicas: the agent's reason, said by it.
    for (const r of [a, b]) {
      const history = JSON.parse(await getText(r, `/api/v1/clusters/${CLUSTER}/path-history`)).items;
      expect(history[0], JSON.stringify(history)).toMatchObject({
        path: 'relayed',
        reason: '443-only',
        reasonFrom: 'agent',
      });
      expect(sample(await metrics(r), 'tunnel_relay_agents_relayed{reason="443-only",from="agent"}')).toBe(1);
    }
  });

  it('a CONNECT download through B reaches the agent on A byte for byte', async () => {
    const n = 8 * 1024 * 1024;
    const before = sample(await metrics(b), 'tunnel_relay_mesh_forwarded_total{kind="connect"}');
    const got = await sha256Of([
      ...viaProxy(b),
      `http://${CLUSTER}.clusters.local:${upstreamPort}/bytes?n=${n}`,
    ]);
    expect(got.code).toBe(0);
    expect(got.bytes).toBe(n);
    expect(got.sha).toBe(sha256OfPattern(n));
    expect(sample(await metrics(b), 'tunnel_relay_mesh_forwarded_total{kind="connect"}')).toBe(before + 1);
    expect(sample(await metrics(b), 'tunnel_relay_mesh_replicas')).toBe(2);
  }, 60_000);

  it('a path-proxy GET through B reaches the agent on A byte for byte', async () => {
    const n = 3 * 1024 * 1024 + 17;
    const got = await sha256Of([
      '-sS',
      '-f',
      '--cacert',
      caFile(),
      '-H',
      `Authorization: Bearer ${adminKey}`,
      `${b.ready.url}/api/v1/clusters/${CLUSTER}/proxy/bytes?n=${n}`,
    ]);
    expect(got.code).toBe(0);
    expect(got.bytes).toBe(n);
    expect(got.sha).toBe(sha256OfPattern(n));
    const hello = await curl([
      '-sS',
      '--cacert',
      caFile(),
      '-H',
      `Authorization: Bearer ${adminKey}`,
      `${b.ready.url}/api/v1/clusters/${CLUSTER}/proxy/whoami`,
    ]);
    // The upstream never sees the relay credential nor the mesh key.
    expect(JSON.parse(hello.stdout)).toEqual({ served: 'mesh-upstream', authorization: null });
  }, 60_000);

  it('a path-proxy POST through B carries its body to the agent on A, by length and chunked', async () => {
    const body = join(fleet.dir, 'upload.bin');
    writeFileSync(body, Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 251)));
    const want = createHash('sha256').update(readFileSync(body)).digest('hex');
    for (const framing of [[], ['-H', 'Transfer-Encoding: chunked']]) {
      const got = await sha256Of([
        '-sS',
        '-f',
        '--cacert',
        caFile(),
        '-H',
        `Authorization: Bearer ${adminKey}`,
        '-H',
        'content-type: application/octet-stream',
        ...framing,
        '--data-binary',
        `@${body}`,
        `${b.ready.url}/api/v1/clusters/${CLUSTER}/proxy/echo`,
      ]);
      expect(got.code).toBe(0);
      expect(got.sha).toBe(want);
    }
  }, 60_000);

  it('kubectl with a kubeconfig made on B reaches the agent on A through the path proxy', async () => {
    const k = await run(RELAY_BIN, ['kubeconfig', CLUSTER], adminEnvOf({ ...b.ready, adminKey }));
    expect(k.code, k.stderr).toBe(0);
    const file = join(fleet.dir, 'kubeconfig');
    writeFileSync(file, k.stdout, { mode: 0o600 });
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        'kubectl',
        ['--kubeconfig', file, '--request-timeout', '20s', 'version', '-o', 'json'],
        { env: cleanEnv({ HOME: fleet.dir }), timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).serverVersion).toMatchObject({ gitVersion: 'v1.30.0+mesh-upstream' });
  });

  it('an Upgrade through B is spliced to the agent on A both ways', async () => {
    const got = await rawExchange(
      b,
      `GET /api/v1/clusters/${CLUSTER}/proxy/stream HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${adminKey}\r\n` +
        'connection: Upgrade\r\nupgrade: echo\r\n\r\nping-through-the-mesh',
      /ping-through-the-mesh/,
    );
    expect(got).toMatch(/^HTTP\/1\.1 101/);
    expect(got).toContain('ping-through-the-mesh');
  });

  it('a request with a wrong or empty mesh key is refused, counted, and never reaches the agent', async () => {
    const before = sample(await metrics(a), 'tunnel_relay_mesh_requests_total{result="refused"}');
    for (const value of ['not-the-fleet-key', '']) {
      const connectAnswer = await rawExchange(
        a,
        `CONNECT ${CLUSTER}.clusters.local:${upstreamPort} HTTP/1.1\r\nhost: x\r\n` +
          `proxy-authorization: Bearer ${adminKey}\r\ntunnel-mesh-key: ${value}\r\n\r\n`,
      );
      expect(connectAnswer).toMatch(/^HTTP\/1\.1 403/);
      expect(connectAnswer).toContain('MESH_UNAUTHENTICATED');
      const proxied = await curl([
        '-sS',
        '--cacert',
        caFile(),
        '-H',
        `Authorization: Bearer ${adminKey}`,
        // curl sends an empty header only in its `name;` spelling.
        '-H',
        value === '' ? 'tunnel-mesh-key;' : `tunnel-mesh-key: ${value}`,
        '-w',
        '\n%{http_code}',
        `${a.ready.url}/api/v1/clusters/${CLUSTER}/proxy/hello`,
      ]);
      expect(proxied.stdout).toMatch(/403$/);
      expect(proxied.stdout).toContain('MESH_UNAUTHENTICATED');
      expect(proxied.stdout).not.toContain('hello from');
    }
    expect(sample(await metrics(a), 'tunnel_relay_mesh_requests_total{result="refused"}')).toBe(before + 4);
  });

  it('a replica with another hub key or another certificate refuses to start', async () => {
    const otherKey = join(fleet.dir, 'other-hub.key');
    writeFileSync(otherKey, `${keyToBase64(generateKeyPair().privateKey)}\n`, { mode: 0o600 });
    const common = ['serve', '--listen', '127.0.0.1:0', '--udp-port', 'off', '--stun-port', 'off'];
    const wrongKey = await run(
      RELAY_BIN,
      [
        ...common,
        '--data-dir',
        tempDir('mesh-bad-'),
        ...fleetServeArgs({ ...fleet.files, hubKeyFile: otherKey }, fleet.store),
      ],
      cleanEnv(),
      30_000,
    );
    expect(wrongKey.code).toBe(2);
    expect(wrongKey.stderr).toContain(`BAD_CONFIG`);
    expect(wrongKey.stderr).toContain(`fleet's ${fleet.files.hubPublicKey}`);
    expect(wrongKey.stderr).toContain('--hub-key-file');
    const ownCert = fleet
      .serveArgs()
      .filter(
        (_, i, all) =>
          !['--tls-cert', '--tls-key'].includes(all[i] ?? '') &&
          !['--tls-cert', '--tls-key'].includes(all[i - 1] ?? ''),
      );
    const wrongCert = await run(
      RELAY_BIN,
      [...common, '--data-dir', tempDir('mesh-bad-'), ...ownCert],
      cleanEnv(),
      30_000,
    );
    expect(wrongCert.code).toBe(2);
    expect(wrongCert.stderr).toContain(`fleet's ${fleet.files.caPin}`);
    expect(wrongCert.stderr).toContain('--tls-cert and --tls-key');
  });
});

describe('the mesh key', () => {
  it('never reaches a replica log', async () => {
    const key = readFileSync(fleet.files.meshKeyFile, 'utf8').trim();
    const sent = Buffer.from(key, 'latin1').toString('base64');
    for (const r of [a, b]) {
      expect(r.proc.stderr).toContain('mesh: joined the fleet');
      for (const secret of [key, sent]) expect(r.proc.stderr + r.proc.stdout).not.toContain(secret);
    }
  });
});

describe('the replica holding the agent dies (kill -9)', () => {
  it('B leaves A out once A refuses the connection, waits for the agent, and answers 503 AGENT_NOT_CONNECTED', async () => {
    await a.proc.stop('SIGKILL');
    const failuresBefore = sample(await metrics(b), 'tunnel_relay_mesh_forward_failures_total');
    // A client with a 10 s timeout gets an answer: the wait for an agent on the move is 5 s at most. A's
    // heartbeat is still fresh and the store still places the agent there, but nothing listens at A any more.
    const proxied = () =>
      curl([
        '-sS',
        '--max-time',
        '10',
        '--cacert',
        caFile(),
        '-H',
        `Authorization: Bearer ${adminKey}`,
        '-w',
        '\n%{http_code}',
        `${b.ready.url}/api/v1/clusters/${CLUSTER}/proxy/hello`,
      ]);
    const first = await proxied();
    expect(first.stdout).toMatch(/503$/);
    expect(first.stdout).toContain('AGENT_NOT_CONNECTED');
    // B tried A once, and leaves it out from then on (until --mesh-dead-after drops it from the store anyway).
    expect(sample(await metrics(b), 'tunnel_relay_mesh_forward_failures_total')).toBe(failuresBefore + 1);
    const connect = await curl([
      ...viaProxy(b),
      '-w',
      '%{http_connect}',
      `http://${CLUSTER}.clusters.local:${upstreamPort}/hello`,
    ]);
    expect(connect.stdout).toBe('503');
    expect(sample(await metrics(b), 'tunnel_relay_mesh_forward_failures_total')).toBe(failuresBefore + 1);
    // The API agrees with the proxies once A's heartbeat is older than --mesh-dead-after (5 s): no live replica
    // holds the session, whatever A wrote to the store before.
    await vi.waitFor(
      async () => {
        const r = await run(
          RELAY_BIN,
          ['cluster', 'get', CLUSTER, '--output', 'json'],
          adminEnvOf({ ...b.ready, adminKey }),
        );
        expect(JSON.parse(r.stdout).connected).toBe(false);
      },
      { timeout: 15_000, interval: 500 },
    );
  }, 40_000);
});
