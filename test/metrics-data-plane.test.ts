/**
 * The data plane's counters on /metrics, through the real binaries: `tunnel-relay serve` and a
 * `tunnel-client` agent with a plain HTTP upstream. Bytes move through CONNECT and the path proxy with
 * curl; real causes provoke refusals and drops (a DERP client with another accepted cluster's key sends
 * outside the policy and garbage to the hub, connects twice, and an unknown key is refused); curl reads
 * /metrics before and after, and the counters must have moved by what happened and never gone back,
 * also after the agent's stream link closes. Every metric name in docs/OPERATIONS.md is exported and
 * every exported name is documented.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, parseKey, publicKeyFromPrivate } from '../shared/keys.js';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { connectDerp, type DerpClient } from '../shared/net/derp/client.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  freeUdpPort,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  ROOT,
  run,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { waitFor as waitUntil } from './helpers/wait.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

let relay: Proc;
let ready: ReadyLine;
let adminEnv: NodeJS.ProcessEnv;
let relayCaFile: string;
let upstream: http.Server;
let upstreamPort: number;
let agent: Proc;
const stateDirs: Record<string, string> = {};
const derpClients: DerpClient[] = [];

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);

/** Creates a cluster and joins it (registered and Accepted); runs its agent when `start`. */
async function join_(name: string, start: boolean): Promise<void> {
  const created = await admin('cluster', 'create', name, '--output', 'json');
  expect(created.code, created.stderr).toBe(0);
  const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const stateDir = join(tempDir('metrics-agent-'), 'state');
  stateDirs[name] = stateDir;
  const j = await run(
    CLIENT_BIN,
    // --egress 443-only: the traffic stays on the relay, whose counters this test reads (the hub's UDP
    // port is on, so an agent allowed UDP would move the bytes to its direct path).
    [
      ...args,
      '--state-dir',
      stateDir,
      '--upstream',
      `http://127.0.0.1:${upstreamPort}`,
      '--egress',
      '443-only',
      '--wait',
    ],
    cleanEnv(),
    40_000,
  );
  expect(j.code, j.stderr).toBe(0);
  if (start) agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
}

type Scrape = { values: Map<string, number>; types: Map<string, string>; text: string };

/** GET /metrics with curl; samples keyed by `name{labels}` exactly as exposed. */
async function scrape(): Promise<Scrape> {
  const r = await curl(['-sS', '-f', '--cacert', relayCaFile, `${ready.url}/metrics`]);
  expect(r.stderr).toBe('');
  const values = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) types.set(t[1]!, t[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return { values, types, text: r.stdout };
}

const v = (s: Scrape, key: string): number => {
  const x = s.values.get(key);
  if (x === undefined) throw new Error(`${key} not exported:\n${s.text}`);
  return x;
};
const delta = (a: Scrape, b: Scrape, key: string): number => v(b, key) - (a.values.get(key) ?? 0);

/** Every counter sample in `before` is still exported in `after` and did not decrease. */
function expectMonotonic(before: Scrape, after: Scrape): void {
  for (const [key, value] of before.values) {
    const name = key.split('{', 1)[0]!;
    if (before.types.get(name) !== 'counter') continue;
    expect(after.values.get(key), key).toBeGreaterThanOrEqual(value);
  }
}

const viaRelay = (key = ready.adminKey ?? '') => [
  '-sS',
  '-p',
  '-x',
  ready.url,
  '--proxy-cacert',
  relayCaFile,
  '--proxy-header',
  `Proxy-Authorization: Bearer ${key}`,
];

beforeAll(async () => {
  buildIfStale();
  const dir = tempDir('metrics-dp-');
  upstream = http.createServer(sampleHandler('plain'));
  upstreamPort = await listen(upstream);
  // The STUN responder and the hub's UDP port on, so that their metrics are exported too.
  const started = await startServe(join(dir, 'relay'), '127.0.0.1:0', [
    '--stun-port',
    String(await freeUdpPort()),
    '--udp-port',
    String(await freeUdpPort()),
  ]);
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
  await join_('edge-1', true);
  await join_('edge-2', false);
  await waitConnected(adminEnv, 'edge-1', 20_000);
  const k = await admin('kubeconfig', 'edge-1', '--output', 'json');
  expect(k.code, k.stderr).toBe(0);
  const ca = JSON.parse(k.stdout).clusters[0].cluster['certificate-authority-data'];
  relayCaFile = join(dir, 'relay-ca.pem');
  writeFileSync(relayCaFile, Buffer.from(ca, 'base64'));
}, 180_000);

afterAll(async () => {
  for (const c of derpClients) c.close();
  await agent?.stop();
  await relay?.stop();
  await cleanup();
  upstream?.close();
});

/** A DERP client with the key in `name`'s state dir (its agent is not running). */
function derpAs(name: string): { client: DerpClient; hub: Buffer } {
  const dir = stateDirs[name]!;
  const privateKey = parseKey(readFileSync(join(dir, 'private.key'), 'utf8').trim());
  const tunnel = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).tunnel;
  const client = connectDerp({
    url: tunnel.derpUrl,
    caPin: ready.caPin,
    keyPair: { privateKey, publicKey: publicKeyFromPrivate(privateKey) },
    onPacket: () => {},
  });
  derpClients.push(client);
  return { client, hub: parseKey(tunnel.hubPublicKey) };
}

function agentPublicKey(name: string): Buffer {
  const pk = parseKey(readFileSync(join(stateDirs[name]!, 'private.key'), 'utf8').trim());
  return publicKeyFromPrivate(pk);
}

const waitFor = (cond: () => Promise<boolean>, ms: number, what: string) => waitUntil(cond, ms, what, 200);

describe('data-plane counters on /metrics', () => {
  it('move with real traffic, refusals and drops, and never go back when the link closes', async () => {
    const before = await scrape();
    // edge-1's agent runs; `join --wait` may have brought edge-2's session up for a moment (it stays usable).
    expect(v(before, 'tunnel_relay_hub_sessions_up')).toBeGreaterThanOrEqual(1);
    expect(v(before, 'tunnel_relay_hub_handshakes_total')).toBeGreaterThanOrEqual(1);

    // Bytes through CONNECT (1 MB down) and the path proxy; two refusals at the CONNECT proxy.
    const n = 1_000_000;
    const big = await curl([
      ...viaRelay(),
      '-o',
      '/dev/null',
      '-w',
      '%{size_download}',
      `http://edge-1.clusters.local:${upstreamPort}/bytes?n=${n}`,
    ]);
    expect(big.stdout).toBe(String(n));
    const hello = await curl([...viaRelay(), `http://edge-1.clusters.local:${upstreamPort}/hello`]);
    expect(hello.stdout).toBe('hello from plain');
    const viaPath = await curl([
      '-sS',
      '--cacert',
      relayCaFile,
      '-H',
      `Authorization: Bearer ${ready.adminKey}`,
      `${ready.url}/api/v1/clusters/edge-1/proxy/hello`,
    ]);
    expect(viaPath.stdout).toBe('hello from plain');
    const unknown = await curl([...viaRelay(), '-w', '%{http_connect}', 'http://nowhere.clusters.local:80/']);
    expect(unknown.stdout).toBe('404');
    const badKey = await curl([
      ...viaRelay('not-a-key'),
      '-w',
      '%{http_connect}',
      'http://edge-1.clusters.local:80/',
    ]);
    expect(badKey.stdout).toBe('407');

    // DERP: edge-2's key (accepted, its agent not running) sends outside the policy (to edge-1) and
    // garbage to the hub; the same key connects a second time; an unknown key is refused.
    const { client: c1, hub } = derpAs('edge-2');
    await c1.whenConnected(10_000);
    const edge1 = agentPublicKey('edge-1');
    for (let i = 0; i < 3; i++) expect(c1.send(edge1, Buffer.from(`not for you ${i}`))).toBe(true);
    const garbage = Buffer.alloc(64, 0xee); // WireGuard type word 0xeeeeeeee: not a message type
    expect(c1.send(hub, garbage)).toBe(true);
    const { client: c2 } = derpAs('edge-2');
    await c2.whenConnected(10_000);
    c1.close(); // replaced (4003); closed before its (8-16 s) reconnect
    const stranger = connectDerp({
      url: `${ready.url.replace(/^https/, 'wss')}/derp`,
      caPin: ready.caPin,
      keyPair: generateKeyPair(),
      onPacket: () => {},
      // Refused (4001): stop before the client's backoff tries again.
      onState: (e) => {
        if (e.state === 'reconnecting') queueMicrotask(() => stranger.close());
      },
    });
    derpClients.push(stranger);

    let after = await scrape();
    await waitFor(
      async () => {
        after = await scrape();
        return (
          delta(before, after, 'tunnel_relay_derp_refused_total{reason="not_admitted"}') >= 1 &&
          delta(before, after, 'tunnel_relay_hub_dropped_total{stage="device",reason="bad-type"}') >= 1
        );
      },
      15_000,
      'the refusal and the hub drop',
    );

    // DERP relay
    expect(delta(before, after, 'tunnel_relay_derp_packets_dropped_total{reason="policy"}')).toBe(3);
    expect(delta(before, after, 'tunnel_relay_derp_refused_total{reason="not_admitted"}')).toBe(1);
    expect(delta(before, after, 'tunnel_relay_derp_replaced_total')).toBe(1);
    expect(delta(before, after, 'tunnel_relay_derp_accepts_total')).toBeGreaterThanOrEqual(3);
    expect(v(after, 'tunnel_relay_derp_clients')).toBe(3); // hub, edge-1's agent, edge-2's test client
    expect(delta(before, after, 'tunnel_relay_derp_bytes_dropped_total')).toBeGreaterThanOrEqual(3 * 12);
    // 1 MB went agent -> relay -> hub: received from a socket client, handed to the in-process hub.
    expect(delta(before, after, 'tunnel_relay_derp_bytes_received_total')).toBeGreaterThan(n);
    expect(delta(before, after, 'tunnel_relay_derp_bytes_sent_total')).toBeGreaterThan(n);
    expect(delta(before, after, 'tunnel_relay_derp_packets_received_total')).toBeGreaterThan(15);

    // Hub node: both accepted agents are peers; edge-2's garbage was dropped by the device.
    expect(v(after, 'tunnel_relay_hub_peers')).toBe(2);
    expect(v(after, 'tunnel_relay_hub_sessions_up')).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, 'tunnel_relay_hub_dropped_total{stage="device",reason="bad-type"}')).toBe(1);
    expect(delta(before, after, 'tunnel_relay_hub_bytes_received_total')).toBeGreaterThan(n);
    expect(delta(before, after, 'tunnel_relay_hub_bytes_sent_total')).toBeGreaterThan(0);
    expect(delta(before, after, 'tunnel_relay_hub_datagrams_received_total')).toBeGreaterThan(15);

    // Streams and proxies: three streams opened (two CONNECT, one path request), none open now.
    expect(v(after, 'tunnel_relay_streams_links')).toBe(1);
    expect(v(after, 'tunnel_relay_streams_open')).toBe(0);
    expect(delta(before, after, 'tunnel_relay_streams_opened_total')).toBe(3);
    expect(delta(before, after, 'tunnel_relay_streams_arq_bytes_received_total')).toBeGreaterThan(n);
    const connectOk = 'tunnel_relay_proxy_requests_total{proxy="connect",result="established",status="200"}';
    expect(delta(before, after, connectOk)).toBe(2);
    const refused = (s: string) =>
      `tunnel_relay_proxy_requests_total{proxy="connect",result="refused",status="${s}"}`;
    expect(delta(before, after, refused('404'))).toBe(1);
    expect(delta(before, after, refused('407'))).toBe(1);
    const pathOk = 'tunnel_relay_proxy_requests_total{proxy="path",result="forwarded",status="2xx"}';
    expect(delta(before, after, pathOk)).toBe(1);
    expectMonotonic(before, after);

    // The agent goes away: the hub closes its stream link after the disconnect grace (8-10 s). The link's
    // counters stay in the totals.
    await agent.stop();
    let gone = after;
    await waitFor(
      async () => {
        gone = await scrape();
        return v(gone, 'tunnel_relay_streams_links') === 0;
      },
      30_000,
      'the stream link to close',
    );
    expect(v(gone, 'tunnel_relay_streams_opened_total')).toBe(v(after, 'tunnel_relay_streams_opened_total'));
    expect(v(gone, 'tunnel_relay_derp_clients')).toBe(2);
    expectMonotonic(after, gone);
  }, 120_000);

  it('exports every metric docs/OPERATIONS.md lists, and documents every exported one', async () => {
    const doc = readFileSync(join(ROOT, 'docs/OPERATIONS.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Metrics and health'));
    const end = section.indexOf('\n## ', 5);
    const text = end > 0 ? section.slice(0, end) : section;
    const documented = new Set(text.match(/tunnel_relay_[a-z0-9_]+/g) ?? []);
    const families = [...(await scrape()).types.keys()];
    // The relay's own families are listed one by one; prom-client's default collectors as a group.
    const exported = new Set(families.filter((name) => name.startsWith('tunnel_relay_')));
    expect([...documented].sort()).toEqual([...exported].sort());
    for (const name of [
      'process_resident_memory_bytes',
      'process_open_fds',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(families).toContain(name);
    }
  });
});
