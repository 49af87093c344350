/**
 * The hub -> agent proxies through the real binaries: `tunnel-relay serve` and two `tunnel-client`
 * agents (one with a plain HTTP upstream, one with an HTTPS upstream and its CA), driven by real
 * clients: curl through CONNECT (plain and TLS end to end, 100 MB with sha256), a raw CONNECT client
 * for a slow reader next to fast streams, kubectl with the relay's kubeconfig, and kill -9 of an
 * agent in the middle of a download (the client gets an error, not a hang).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { connectKubeconfig } from '../relay/data/proxy/connect-kubeconfig.js';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';
import { certFor, connectTunnel, listen, sampleHandler, sha256OfPattern } from './proxy-fixtures.js';

let relay: Proc;
let ready: ReadyLine;
let adminEnv: NodeJS.ProcessEnv;
let dir: string;
let relayCaFile: string;
let relayCa: string;
let plain: http.Server;
let plainPort: number;
let secure: https.Server;
let securePort: number;
let upstreamCaFile: string;
let tokenFile: string;
const agents: Record<string, { proc: Proc; stateDir: string; env: NodeJS.ProcessEnv }> = {};

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);

async function joinAndRun(name: string, flags: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const created = await admin('cluster', 'create', name, '--output', 'json');
  expect(created.code, created.stderr).toBe(0);
  const join_ = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const stateDir = join(tempDir('proxy-e2e-agent-'), 'state');
  const j = await run(CLIENT_BIN, [...join_, '--state-dir', stateDir, ...flags, '--wait'], env, 40_000);
  expect(j.code, j.stderr).toBe(0);
  agents[name] = { proc: startAgent(stateDir, env), stateDir, env };
  await waitConnected(adminEnv, name);
}

function startAgent(stateDir: string, env: NodeJS.ProcessEnv): Proc {
  return new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env);
}

const viaRelay = () => [
  '-sS',
  '-p',
  '-x',
  ready.url,
  '--proxy-cacert',
  relayCaFile,
  '--proxy-header',
  `Proxy-Authorization: Bearer ${ready.adminKey}`,
];

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('proxy-e2e-');
  plain = http.createServer(sampleHandler('plain'));
  plainPort = await listen(plain);
  const cert = certFor(['edge-2.clusters.local', 'localhost']);
  upstreamCaFile = join(dir, 'upstream-ca.pem');
  writeFileSync(upstreamCaFile, cert.cert);
  secure = https.createServer({ key: cert.key, cert: cert.cert }, sampleHandler('secure'));
  securePort = await listen(secure);

  tokenFile = join(dir, 'agent-token');
  writeFileSync(tokenFile, 'agent-sa-token\n');
  const started = await startServe(join(dir, 'relay'), '127.0.0.1:0');
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
  await joinAndRun('edge-1', ['--upstream', `http://127.0.0.1:${plainPort}`], cleanEnv());
  await joinAndRun(
    'edge-2',
    ['--upstream', `https://localhost:${securePort}`, '--allow', `127.0.0.1:${plainPort}`],
    cleanEnv({ TUNNEL_CLIENT_UPSTREAM_CA: upstreamCaFile, TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: tokenFile }),
  );
  const k = await admin('kubeconfig', 'edge-2', '--output', 'json');
  expect(k.code, k.stderr).toBe(0);
  const doc = JSON.parse(k.stdout);
  relayCa = Buffer.from(doc.clusters[0].cluster['certificate-authority-data'], 'base64').toString();
  relayCaFile = join(dir, 'relay-ca.pem');
  writeFileSync(relayCaFile, relayCa);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
  plain?.close();
  secure?.close();
});

describe('CONNECT through the real relay and agents', () => {
  it('curl reaches a plain upstream', async () => {
    const r = await curl([...viaRelay(), `http://edge-1.clusters.local:${plainPort}/hello`]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from plain');
  });

  it('curl runs TLS end to end to an HTTPS upstream (the certificate names edge-2.clusters.local)', async () => {
    const r = await curl([
      ...viaRelay(),
      '--cacert',
      upstreamCaFile,
      `https://edge-2.clusters.local:${securePort}/hello`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from secure');
  });

  it('an agent refuses a port that is not on its allowlist (502), and allows an --allow entry', async () => {
    const refused = await curl([
      ...viaRelay(),
      '-w',
      '%{http_connect}',
      `http://edge-1.clusters.local:${securePort}/`,
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).toBe('502');
    const allowed = await curl([...viaRelay(), `http://edge-2.clusters.local:${plainPort}/hello`]);
    expect(allowed.stdout).toBe('hello from plain');
  });

  it('downloads 100 MB with a matching sha256', async () => {
    const n = 100 * 1024 * 1024;
    const h = createHash('sha256');
    let bytes = 0;
    const code = await new Promise<number | null>((resolve) => {
      const c = spawn('curl', [...viaRelay(), `http://edge-1.clusters.local:${plainPort}/bytes?n=${n}`]);
      c.stdout.on('data', (d: Buffer) => {
        bytes += d.length;
        h.update(d);
      });
      const t = setTimeout(() => c.kill('SIGKILL'), 90_000);
      c.on('exit', (cd) => {
        clearTimeout(t);
        resolve(cd);
      });
    });
    expect(code).toBe(0);
    expect(bytes).toBe(n);
    expect(h.digest('hex')).toBe(sha256OfPattern(n));
  }, 120_000);

  it('carries 200 concurrent CONNECT streams, each with its own bytes', async () => {
    const one = async (i: number): Promise<number> => {
      const s = await connectTunnel(
        ready.url,
        relayCa,
        `edge-1.clusters.local:${plainPort}`,
        ready.adminKey!,
      );
      const size = 10_000 + i * 997;
      s.write(`GET /bytes?n=${size} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      const parts: Buffer[] = [];
      s.on('data', (d: Buffer) => parts.push(d));
      await new Promise((r) => s.once('end', r));
      s.destroy();
      const all = Buffer.concat(parts);
      const body = all.subarray(all.indexOf('\r\n\r\n') + 4);
      const got = createHash('sha256').update(body).digest('hex');
      expect(got).toBe(sha256OfPattern(size));
      return body.length;
    };
    const sizes = await Promise.all(Array.from({ length: 200 }, (_, i) => one(i)));
    expect(sizes).toEqual(Array.from({ length: 200 }, (_, i) => 10_000 + i * 997));
  }, 90_000);

  it('a slow reader on one stream does not hold back other streams', async () => {
    const slow = await connectTunnel(
      ready.url,
      relayCa,
      `edge-1.clusters.local:${plainPort}`,
      ready.adminKey!,
    );
    slow.write(`GET /bytes?n=${64 * 1024 * 1024} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    slow.pause(); // reads nothing: its stream's window fills and stays full
    await sleep(500);
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      const r = await curl([...viaRelay(), `http://edge-1.clusters.local:${plainPort}/hello`]);
      expect(r.stdout).toBe('hello from plain');
    }
    const fastMs = Date.now() - started;
    // The slow stream still delivers everything once read.
    let got = 0;
    slow.on('data', (d: Buffer) => {
      got += d.length;
    });
    slow.resume();
    await new Promise((r) => slow.once('end', r));
    expect(got).toBeGreaterThan(64 * 1024 * 1024);
    expect(fastMs).toBeLessThan(15_000);
  }, 90_000);
});

describe('path proxy and kubeconfig', () => {
  it('kubectl version with the generated kubeconfig reaches the HTTPS upstream through the path proxy', async () => {
    const k = await admin('kubeconfig', 'edge-2');
    expect(k.code, k.stderr).toBe(0);
    const file = join(dir, 'kubeconfig');
    writeFileSync(file, k.stdout);
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        'kubectl',
        ['--kubeconfig', file, '--request-timeout', '20s', 'version', '-o', 'json'],
        { env: cleanEnv({ HOME: dir }), timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).serverVersion).toMatchObject({ gitVersion: 'v1.30.0+secure' });
  });
  it('path proxy to an agent with TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: the upstream sees the agent token, not the relay key', async () => {
    const r = await curl([
      '-sS',
      '--cacert',
      relayCaFile,
      '-H',
      `Authorization: Bearer ${ready.adminKey}`,
      '-H',
      'Impersonate-User: system:admin',
      `${ready.url}/api/v1/clusters/edge-2/proxy/whoami`,
    ]);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ served: 'secure', authorization: 'Bearer agent-sa-token' });
  });

  it('kubectl get --raw / through CONNECT (proxy-url kubeconfig, TLS end to end to the HTTPS upstream)', async () => {
    const doc = connectKubeconfig({
      cluster: 'edge-2',
      relayUrl: ready.url,
      relayCaPem: relayCa,
      accessKey: ready.adminKey!,
      port: securePort,
      upstreamCaPem: readFileSync(upstreamCaFile, 'utf8'),
      user: { token: 'cluster-token' },
    });
    const file = join(dir, 'kubeconfig-connect');
    writeFileSync(file, stringifyYaml(doc));
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        'kubectl',
        ['--kubeconfig', file, '--request-timeout', '10s', 'get', '--raw', '/whoami'],
        { env: cleanEnv({ HOME: dir }), timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // The upstream saw kubectl's own credential, sent inside the end-to-end TLS session.
    expect(JSON.parse(r.stdout)).toEqual({ served: 'secure', authorization: 'Bearer cluster-token' });
  });
});

describe('faults', () => {
  it('kill -9 of the agent mid-download: curl fails with an error instead of hanging', async () => {
    const a = agents['edge-1']!;
    let bytes = 0;
    const c: ChildProcess = spawn('curl', [
      ...viaRelay(),
      '--limit-rate',
      '2M',
      `http://edge-1.clusters.local:${plainPort}/bytes?n=${500 * 1024 * 1024}`,
    ]);
    c.stdout!.on('data', (d: Buffer) => {
      bytes += d.length;
    });
    let stderr = '';
    c.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((r) => c.on('exit', r));
    const until = Date.now() + 15_000;
    while (bytes < 1024 * 1024 && Date.now() < until) await sleep(50);
    expect(bytes).toBeGreaterThan(0);
    await a.proc.stop('SIGKILL');
    const killedAt = Date.now();
    const timer = setTimeout(() => c.kill('SIGKILL'), 40_000);
    const code = await exited;
    clearTimeout(timer);
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    expect(stderr).toMatch(/curl: \(\d+\)/);
    // Back: the agent restarts and CONNECT works again.
    a.proc = startAgent(a.stateDir, a.env);
    await waitConnected(adminEnv, 'edge-1');
    const r = await curl([...viaRelay(), `http://edge-1.clusters.local:${plainPort}/hello`]);
    expect(r.stdout).toBe('hello from plain');
  }, 90_000);

  it('503 at once while the agent is down', async () => {
    const a = agents['edge-1']!;
    await a.proc.stop('SIGKILL');
    await pollUntil({
      what: 'edge-1 disconnected',
      read: async () =>
        JSON.parse((await admin('cluster', 'get', 'edge-1', '--output', 'json')).stdout).connected,
      until: (connected) => connected === false,
      timeoutMs: 25_000,
      intervalMs: 300,
    });
    const started = Date.now();
    const r = await curl([
      ...viaRelay(),
      '-w',
      '%{http_connect}',
      `http://edge-1.clusters.local:${plainPort}/`,
    ]);
    expect(r.stdout).toBe('503');
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 60_000);

  it('an agent restarted within the grace period serves the very next CONNECT (new session, one retry at the hub)', async () => {
    const a = agents['edge-2']!;
    const warm = await curl([...viaRelay(), `http://edge-2.clusters.local:${plainPort}/hello`]);
    expect(warm.stdout).toBe('hello from plain');
    await a.proc.stop('SIGKILL');
    a.proc = startAgent(a.stateDir, a.env);
    await waitConnected(adminEnv, 'edge-2', 20_000);
    const r = await curl([...viaRelay(), `http://edge-2.clusters.local:${plainPort}/hello`]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from plain');
  }, 60_000);

  it('relay restart (SIGTERM, same data dir and port): CONNECT works again with a new hub session', async () => {
    const before = await curl([...viaRelay(), `http://edge-2.clusters.local:${plainPort}/hello`]);
    expect(before.stdout).toBe('hello from plain');
    const port = new URL(ready.url).port;
    expect(await relay.stop('SIGTERM')).toBe(0);
    const restarted = await startServe(join(dir, 'relay'), `127.0.0.1:${port}`);
    relay = restarted.proc;
    await waitConnected(adminEnv, 'edge-2', 20_000);
    // The agent still holds the old hub's session (old conv); the new hub starts another and the agent adopts it.
    const after = await curl([...viaRelay(), `http://edge-2.clusters.local:${plainPort}/hello`]);
    expect(after.stderr).toBe('');
    expect(after.stdout).toBe('hello from plain');
  }, 60_000);
});
