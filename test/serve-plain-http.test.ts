/**
 * `tunnel-relay serve --plain-http` behind a real TLS terminator: an in-test `tls.createServer` that
 * pipes every connection to the relay's plain HTTP port (TCP-level termination, so CONNECT passes).
 * Certificates come from `openssl`: a throw-away test CA, and a leaf for localhost signed by it.
 *
 * Relay A: --public-ca-file holds the certificate its terminator serves (the test CA itself: a
 *   self-signed CA certificate naming localhost). The join command carries its pin; the agent joins
 *   through the terminator and its session comes up; curl reaches the agent's upstream through the
 *   path proxy and CONNECT, both via the terminator. The pin is a leaf pin (shared/tls-pin.ts): behind
 *   a terminator that serves a leaf signed by that CA, the printed pin fails with CA_PIN_MISMATCH.
 * Relay B: no --public-ca-file; its terminator serves the CA-signed leaf. The join command carries no
 *   pin, the kubeconfig no CA, and `tunnel-client join --ca-file <CA>` works.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { pinOfCertificate } from '../shared/tls-pin.js';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

interface Side {
  relay: Proc;
  ready: ReadyLine & { plainHttp?: boolean };
  terminator: tls.Server;
  /** https://localhost:<terminator port> */
  publicUrl: string;
  env: NodeJS.ProcessEnv;
}

let dir: string;
let caPem: string;
let caFile: string;
let upstream: http.Server;
let upstreamPort: number;
const sides: Side[] = [];
const agents: Proc[] = [];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 20_000 });
}

/** Test CA (also usable as a server certificate for localhost) and a leaf for localhost signed by it. */
function makeCerts(): { ca: { key: string; cert: string }; leaf: { key: string; cert: string } } {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const san = 'subjectAltName=DNS:localhost,IP:127.0.0.1';
  openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=plain-http test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,digitalSignature',
    '-addext',
    san,
  ]);
  openssl(['req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=localhost']);
  writeFileSync(
    join(dir, 'leaf.ext'),
    `${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n`,
  );
  openssl([
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    '0x1234',
    '-days',
    '2',
    '-extfile',
    'leaf.ext',
    '-out',
    'leaf.pem',
  ]);
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    ca: { key: read('ca.key'), cert: read('ca.pem') },
    leaf: { key: read('leaf.key'), cert: read('leaf.pem') },
  };
}

/** A TLS terminator on 127.0.0.1 forwarding each connection to `target()` (known once the relay is up). */
async function startTerminator(
  cred: { key: string; cert: string },
  target: () => number,
): Promise<[tls.Server, number]> {
  const server = tls.createServer({ key: cred.key, cert: cred.cert }, (client) => {
    const back = net.connect(target(), '127.0.0.1');
    client.pipe(back);
    back.pipe(client);
    const end = () => {
      client.destroy();
      back.destroy();
    };
    client.on('error', end);
    back.on('error', end);
    client.on('close', end);
    back.on('close', end);
  });
  const port = await listen(server as unknown as http.Server);
  return [server, port];
}

async function startSide(name: string, cred: { key: string; cert: string }, extra: string[]): Promise<Side> {
  let relayPort = 0;
  const [terminator, port] = await startTerminator(cred, () => relayPort);
  const publicUrl = `https://localhost:${port}`;
  const { proc, ready } = await startServe(join(dir, name), '127.0.0.1:0', [
    '--plain-http',
    '--public-url',
    publicUrl,
    ...extra,
  ]);
  relayPort = Number(new URL(ready.url).port);
  const env = cleanEnv({
    TUNNEL_RELAY_URL: publicUrl,
    TUNNEL_ACCESS_KEY: ready.adminKey ?? '',
    TUNNEL_RELAY_CA_FILE: caFile,
  });
  const side: Side = { relay: proc, ready, terminator, publicUrl, env };
  sides.push(side);
  return side;
}

const admin = (s: Side, ...args: string[]) => run(RELAY_BIN, args, s.env);

async function createCluster(s: Side, name: string): Promise<string[]> {
  const created = await admin(s, 'cluster', 'create', name, '--output', 'json');
  expect(created.code, created.stderr).toBe(0);
  return ['tunnel-client', ...joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand)];
}

async function joinAndRun(
  s: Side,
  name: string,
  joinWords: string[],
  extra: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
): Promise<void> {
  expect(joinWords.slice(0, 2)).toEqual(['tunnel-client', 'join']);
  const stateDir = join(tempDir('plain-http-agent-'), 'state');
  const args = [
    ...joinWords.slice(1),
    '--state-dir',
    stateDir,
    '--upstream',
    `http://127.0.0.1:${upstreamPort}`,
  ];
  const j = await run(CLIENT_BIN, [...args, ...extra, '--wait'], env, 20_000);
  expect(j.code, `${j.stdout}${j.stderr}`).toBe(0);
  agents.push(new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env));
  await waitConnected(s.env, name);
}

let a: Side;
let leafCred: { key: string; cert: string };
const extraServers: tls.Server[] = [];
let b: Side;

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('plain-http-');
  const certs = makeCerts();
  leafCred = certs.leaf;
  caPem = certs.ca.cert;
  caFile = join(dir, 'ca.pem');
  upstream = http.createServer(sampleHandler('upstream'));
  upstreamPort = await listen(upstream);
  a = await startSide('relay-a', certs.ca, ['--public-ca-file', caFile]);
  b = await startSide('relay-b', certs.leaf, []);
}, 60_000);

afterAll(async () => {
  for (const p of agents) await p.stop();
  for (const s of sides) {
    await s.relay.stop();
    s.terminator.close();
  }
  for (const t of extraServers) t.close();
  upstream?.close();
  await cleanup();
});

describe('serve --plain-http with --public-ca-file', () => {
  it('listens on plain HTTP and advertises the public URL and the public CA pin', async () => {
    expect(a.ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(a.ready.publicUrl).toBe(a.publicUrl);
    expect(a.ready.plainHttp).toBe(true);
    const der = new X509Certificate(caPem).raw;
    expect(a.ready.caPin).toBe(pinOfCertificate(der));
    // The relay port itself speaks HTTP, not TLS.
    const r = await curl(['-sS', `${a.ready.url}/healthz`, '-o', '/dev/null', '-w', '%{http_code}'], 10_000);
    expect(r.stdout).toBe('200');
  });

  it('the join command carries the public CA pin; the agent joins through the terminator and connects', async () => {
    const words = await createCluster(a, 'edge-a');
    expect(words).toEqual(expect.arrayContaining(['--relay', a.publicUrl, '--ca-pin', a.ready.caPin]));
    await joinAndRun(a, 'edge-a', words, []);
  }, 45_000);

  it('kubeconfig carries the public CA as certificate-authority-data and the public URL', async () => {
    const k = await admin(a, 'kubeconfig', 'edge-a', '--output', 'json');
    expect(k.code, k.stderr).toBe(0);
    const doc = JSON.parse(k.stdout);
    const cluster = doc.clusters[0].cluster;
    expect(Buffer.from(cluster['certificate-authority-data'], 'base64').toString()).toBe(
      caPem.trimEnd() + '\n',
    );
    expect(cluster.server).toBe(`${a.publicUrl}/api/v1/clusters/edge-a/proxy`);
  });

  it('curl through the terminator reaches the upstream via the path proxy', async () => {
    const r = await curl([
      '-sS',
      '--cacert',
      caFile,
      '-H',
      `Authorization: Bearer ${a.ready.adminKey}`,
      `${a.publicUrl}/api/v1/clusters/edge-a/proxy/hello`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from upstream');
  });

  it('curl through the terminator reaches the upstream via CONNECT', async () => {
    const r = await curl([
      '-sS',
      '-p',
      '-x',
      a.publicUrl,
      '--proxy-cacert',
      caFile,
      '--proxy-header',
      `Proxy-Authorization: Bearer ${a.ready.adminKey}`,
      `http://edge-a.clusters.local:${upstreamPort}/hello`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from upstream');
  });

  it('the printed pin is a leaf pin: a terminator serving a leaf signed by that CA fails with CA_PIN_MISMATCH', async () => {
    const relayPort = Number(new URL(a.ready.url).port);
    const [t, port] = await startTerminator(leafCred, () => relayPort);
    extraServers.push(t);
    const words = await createCluster(a, 'edge-leaf');
    const via = words.map((w) => (w === a.publicUrl ? `https://localhost:${port}` : w));
    expect(via).toContain(`https://localhost:${port}`);
    const stateDir = join(tempDir('plain-http-leaf-'), 'state');
    const r = await run(CLIENT_BIN, [...via.slice(1), '--state-dir', stateDir, '--wait'], cleanEnv(), 20_000);
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/CA_PIN_MISMATCH/);
  });
});

describe('serve --plain-http without --public-ca-file (system / --ca-file trust)', () => {
  it('claims no CA pin', () => {
    expect(b.ready.caPin).toBeUndefined();
    expect(b.ready.publicUrl).toBe(b.publicUrl);
  });

  it('join command has no pin, kubeconfig no CA; join --ca-file <CA> connects through the terminator', async () => {
    const words = await createCluster(b, 'edge-b');
    expect(words).not.toContain('--ca-pin');
    expect(words).toEqual(expect.arrayContaining(['--relay', b.publicUrl]));
    const k = await admin(b, 'kubeconfig', 'edge-b', '--output', 'json');
    expect(k.code, k.stderr).toBe(0);
    expect(JSON.parse(k.stdout).clusters[0].cluster['certificate-authority-data']).toBeUndefined();
    await joinAndRun(b, 'edge-b', words, ['--ca-file', caFile]);
    const r = await curl([
      '-sS',
      '--cacert',
      caFile,
      '-H',
      `Authorization: Bearer ${b.ready.adminKey}`,
      `${b.publicUrl}/api/v1/clusters/edge-b/proxy/hello`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello from upstream');
  }, 45_000);

  it('join without --ca-pin or --ca-file uses the system trust store (here: NODE_EXTRA_CA_CERTS)', async () => {
    const words = await createCluster(b, 'edge-sys');
    expect(words).not.toContain('--ca-pin');
    // Without the CA in the store the same join fails on the certificate.
    const stateDir = join(tempDir('plain-http-untrusted-'), 'state');
    const bad = await run(
      CLIENT_BIN,
      [...words.slice(1), '--state-dir', stateDir, '--wait'],
      cleanEnv(),
      20_000,
    );
    expect(bad.code).not.toBe(0);
    expect(`${bad.stdout}${bad.stderr}`).toMatch(/RELAY_CERT_UNTRUSTED.*certificate.*--ca-pin/);
    await joinAndRun(b, 'edge-sys', words, [], cleanEnv({ NODE_EXTRA_CA_CERTS: caFile }));
  }, 45_000);
});
