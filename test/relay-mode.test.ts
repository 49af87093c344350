/**
 * `serve --mode relay` with real processes: one hub replica and two relay-mode replicas on one throw-away
 * PostgreSQL, the relay-mode ones behind a real haproxy whose address is the fleet's public URL (the hub replica is
 * not behind it: agents and users reach only the relay tier). An agent joins and connects through the tier; a
 * CONNECT download through the tier reaches it byte for byte; the tier's data dir holds no hub key; the hub replica
 * records the client's own address (curl --interface), not the tier's, also through haproxy, which sends
 * `send-proxy-v2` from 127.0.0.5, the tier's `--proxy-protocol` peer; kill -9 of the tier replica carrying the
 * agent makes it reconnect through the other one; bad configurations exit 2 naming the flag.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
  waitConnected,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { type Haproxy, startHaproxy } from './helpers/haproxy.js';
import { startJoinedAgent } from './helpers/joined-agent.js';
import { type Replica, type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { freePort } from './helpers/tinyproxy.js';
import { listen, sampleHandler, sha256OfPattern } from './proxy-fixtures.js';

interface Tier {
  name: string;
  port: number;
  dataDir: string;
  proc: Proc;
}

const CLUSTER = 'edge-tier';
let fleet: ReplicaFleet;
let hub: Replica;
let tiers: Tier[];
let lb: Haproxy;
let publicUrl: string;
let upstream: http.Server;
let upstreamPort: number;
let agent: Proc;
const caFile = () => join(fleet.dir, 'ca.pem');

/** The flags of a relay-mode replica: the fleet's store, certificate and mesh key; no hub key. */
/** haproxy's source address toward the tier, which sends the PROXY protocol from it. */
const BALANCER = '127.0.0.5';

function tierArgs(): string[] {
  const f = fleet.files;
  return [
    ...['--mode', 'relay', '--store', fleet.store.url, '--store-password-file', fleet.store.passwordFile],
    ...['--tls-cert', f.tlsCert, '--tls-key', f.tlsKey, '--mesh-key-file', f.meshKeyFile],
    ...['--public-url', publicUrl, '--drain-grace', '3', '--proxy-protocol', BALANCER],
  ];
}

async function startTier(name: string, port: number): Promise<Tier> {
  const dataDir = tempDir(`tier-${name}-`);
  const { proc } = await startServe(dataDir, `127.0.0.1:${port}`, tierArgs());
  return { name, port, dataDir, proc };
}

const adminEnv = () =>
  cleanEnv({
    TUNNEL_RELAY_URL: publicUrl,
    TUNNEL_ACCESS_KEY: fleet.adminKey(),
    TUNNEL_RELAY_CA_PIN: fleet.files.caPin,
  });

async function get(port: number, path: string): Promise<{ code: number | null; body: string }> {
  const r = await curl(['-sS', '--cacert', caFile(), `https://127.0.0.1:${port}${path}`], 5_000);
  return { code: r.code, body: r.stdout };
}

/** A sample of `name` (with labels) from a replica's /metrics, or null when it does not answer. */
async function sample(port: number, name: string): Promise<number | null> {
  const r = await get(port, '/metrics');
  const line = r.body.split('\n').find((l) => l.startsWith(`${name} `));
  return r.code !== 0 || line === undefined ? null : Number(line.split(' ')[1]);
}

async function joinAgent(): Promise<void> {
  const created = await run(RELAY_BIN, ['cluster', 'create', CLUSTER, '--output', 'json'], adminEnv());
  expect(created.code, created.stderr).toBe(0);
  agent = await startJoinedAgent({
    relayUrl: publicUrl,
    cluster: CLUSTER,
    psk: JSON.parse(created.stdout).bootstrap.psk as string,
    caPin: fleet.files.caPin,
    upstream: `http://127.0.0.1:${upstreamPort}`,
    prefix: 'tier-agent',
  });
  await waitConnected(adminEnv(), CLUSTER, 20_000);
}

beforeAll(async () => {
  buildIfStale();
  fleet = await startReplicaFleet('relay-mode');
  writeFileSync(caFile(), fleet.files.caPem);
  upstream = http.createServer(sampleHandler('tier-upstream'));
  upstreamPort = await listen(upstream);
  const ports = [await freePort(), await freePort()];
  lb = await startHaproxy({
    servers: ports.map((port, i) => ({ name: `t${i}`, host: '127.0.0.1', port })),
    sendProxy: 'v2',
    source: BALANCER,
  });
  publicUrl = `https://127.0.0.1:${lb.port}`;
  // Debug: the request log lines, whose remoteAddress is checked below.
  hub = await fleet.startReplica({ extraArgs: ['--public-url', publicUrl, '--log-level', 'debug'] });
  tiers = await Promise.all(ports.map((port, i) => startTier(`t${i}`, port)));
  await lb.waitForUp(['t0', 't1'], 15_000);
  await joinAgent();
}, 120_000);

afterAll(async () => {
  await agent?.stop('SIGTERM');
  for (const t of tiers ?? []) await t.proc.stop('SIGKILL');
  await lb?.stop();
  upstream?.close();
  await fleet?.stop();
  await cleanup();
  await cleanupAll();
});

/** The tier replica the agent's /derp connection passes through. */
async function agentTier(): Promise<Tier | undefined> {
  for (const t of tiers) if ((await sample(t.port, 'tunnel_relay_tier_agents')) === 1) return t;
  return undefined;
}

async function download(n: number): Promise<{ code: number | null; sha: string; bytes: number }> {
  const r = await curl(
    [
      '-sS',
      '-p',
      '-x',
      publicUrl,
      '--proxy-cacert',
      caFile(),
      '--proxy-header',
      `Proxy-Authorization: Bearer ${fleet.adminKey()}`,
      '-o',
      join(fleet.dir, 'download'),
      '-w',
      '%{size_download}',
      `http://${CLUSTER}.clusters.local:${upstreamPort}/bytes?n=${n}`,
    ],
    30_000,
  );
  const body = r.code === 0 ? readFileSync(join(fleet.dir, 'download')) : Buffer.alloc(0);
  return { code: r.code, bytes: body.length, sha: createHash('sha256').update(body).digest('hex') };
}

/** A CONNECT tunnel through the tier replica on `port` to the agent's upstream, left open. */
async function openTunnel(port: number): Promise<{ closed: Promise<void> }> {
  const socket = connect({ host: '127.0.0.1', port, ca: fleet.files.caPem, servername: 'localhost' });
  const target = `${CLUSTER}.clusters.local:${upstreamPort}`;
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => {
      socket.write(
        `CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\nproxy-authorization: Bearer ${fleet.adminKey()}\r\n\r\n`,
      );
    });
    socket.once('data', (d: Buffer) =>
      d.toString().startsWith('HTTP/1.1 200') ? resolve() : reject(new Error(d.toString())),
    );
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  return { closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

describe('serve --mode relay', () => {
  it('carries the agent: its /derp passes through a tier replica to the hub replica', async () => {
    const t = await agentTier();
    expect(t).toBeDefined();
    // The hub's own in-process client and the agent.
    expect(await sample(Number(new URL(hub.ready.url).port), 'tunnel_relay_derp_clients')).toBe(2);
  });

  it('a CONNECT download through the tier reaches the agent byte for byte', async () => {
    const n = 4 * 1024 * 1024;
    const got = await download(n);
    expect(got.code).toBe(0);
    expect(got.bytes).toBe(n);
    expect(got.sha).toBe(sha256OfPattern(n));
  }, 40_000);

  it('holds no hub key: none in its data dir, none given', () => {
    for (const t of tiers) {
      const files = existsSync(t.dataDir) ? readdirSync(t.dataDir, { recursive: true }).map(String) : [];
      expect(files.filter((f) => f.includes('hub'))).toEqual([]);
      expect(t.proc.child.spawnargs.join(' ')).not.toContain('--hub-key-file');
    }
    expect(hub.proc.child.spawnargs.join(' ')).toContain('--hub-key-file');
  });

  it("the hub replica records the client's own address, not the tier's", async () => {
    const r = await curl([
      '-sS',
      '--interface',
      '127.0.0.9',
      '--cacert',
      caFile(),
      '-H',
      `authorization: Bearer ${fleet.adminKey()}`,
      '-H',
      'content-type: application/json',
      '-d',
      JSON.stringify({ name: 'from-nine' }),
      // Straight to a tier replica: haproxy in TCP mode would show its own address to the tier.
      `https://127.0.0.1:${tiers[0]!.port}/api/v1/clusters`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    // The audit row, and the request's log line.
    await vi.waitFor(
      () => expect(hub.proc.stderr).toMatch(/"target":"from-nine","source":"(::ffff:)?127\.0\.0\.9"/),
      { timeout: 5_000 },
    );
    expect(hub.proc.stderr).toMatch(
      /"method":"POST","url":"\/api\/v1\/clusters","remoteAddress":"(::ffff:)?127\.0\.0\.9"/,
    );
  });

  it("through haproxy's PROXY header, the hub replica records the client's address, not haproxy's", async () => {
    const r = await curl([
      '-sS',
      '--interface',
      '127.0.0.10',
      '--cacert',
      caFile(),
      '-H',
      `authorization: Bearer ${fleet.adminKey()}`,
      '-H',
      'content-type: application/json',
      '-d',
      JSON.stringify({ name: 'from-ten' }),
      `${publicUrl}/api/v1/clusters`,
    ]);
    expect(r.code, r.stderr).toBe(0);
    await vi.waitFor(
      () => expect(hub.proc.stderr).toMatch(/"target":"from-ten","source":"(::ffff:)?127\.0\.0\.10"/),
      { timeout: 5_000 },
    );
    expect(hub.proc.stderr).not.toMatch(/"target":"from-ten","source":"(::ffff:)?127\.0\.0\.5"/);
  });

  it('refuses a client request that carries a mesh key header', async () => {
    const r = await curl([
      '-sS',
      '--cacert',
      caFile(),
      '-H',
      `authorization: Bearer ${fleet.adminKey()}`,
      '-H',
      `tunnel-mesh-key: ${readFileSync(fleet.files.meshKeyFile, 'latin1').trim()}`,
      '-w',
      '\n%{http_code}',
      `https://127.0.0.1:${tiers[0]!.port}/api/v1/clusters`,
    ]);
    expect(r.stdout).toContain('MESH_UNAUTHENTICATED');
    expect(r.stdout.trim().split('\n').at(-1)).toBe('403');
  });

  it('kill -9 of the tier replica carrying the agent: it reconnects through the other one', async () => {
    const t = (await agentTier())!;
    const other = tiers.find((x) => x !== t)!;
    await t.proc.stop('SIGKILL');
    await lb.waitForUp([other.name], 10_000);
    const started = Date.now();
    await vi.waitFor(async () => expect(await sample(other.port, 'tunnel_relay_tier_agents')).toBe(1), {
      timeout: 10_000,
      interval: 200,
    });
    await waitConnected(adminEnv(), CLUSTER, 10_000);
    const got = await download(1024 * 1024);
    expect(got.sha).toBe(sha256OfPattern(1024 * 1024));
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 40_000);

  it('refuses a hub key, a WireGuard UDP port or a store no fleet shares, exit 2 naming the flag', async () => {
    const base = [
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      tempDir('tier-bad-'),
      '--stun-port',
      'off',
    ];
    const cases: Array<[string[], RegExp]> = [
      [[...tierArgs(), '--hub-key-file', fleet.files.hubKeyFile], /hub-key-file \(--hub-key-file\)/],
      [[...tierArgs(), '--udp-port', '51820'], /udp-port \(--udp-port\)/],
      [['--mode', 'relay', '--mesh-key-file', fleet.files.meshKeyFile], /store \(--mode\)/],
    ];
    for (const [args, message] of cases) {
      const r = await run(RELAY_BIN, [...base, ...args], cleanEnv(), 20_000);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  }, 60_000);

  it('drains on SIGTERM: moves the agent, cuts a CONNECT tunnel still open when the grace ends, exits 0', async () => {
    const t = (await agentTier())!;
    const tunnel = await openTunnel(t.port);
    const started = Date.now();
    expect(await t.proc.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000 + 1_000);
    await tunnel.closed;
    expect(t.proc.stderr).toContain('draining: grace ran out with forwarded requests in flight');
    expect(t.proc.stderr).toContain('draining: moving agents (ending their /derp connections)');
    // Closed by the relay itself, not by serve's last-resort exit at the end of the grace.
    expect(t.proc.stderr).not.toContain('drain grace of 3 s over');
  }, 30_000);

  it('is ready only while a hub replica is live and ready', async () => {
    const t = await startTier('t2', await freePort());
    await vi.waitFor(async () => expect((await get(t.port, '/readyz')).code).toBe(0), {
      timeout: 10_000,
      interval: 250,
    });
    await hub.proc.stop('SIGKILL');
    await vi.waitFor(
      async () => expect((await get(t.port, '/readyz')).body).toContain('no hub replica is live'),
      { timeout: 12_000, interval: 250 },
    );
    expect((await get(t.port, '/healthz')).body).toBe('ok\n');
    tiers.push(t);
  }, 30_000);
});
