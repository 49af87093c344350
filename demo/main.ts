#!/usr/bin/env node
/**
 * `npm run demo`: the whole path on this machine. Starts `tunnel-relay serve` in a temporary data dir,
 * creates a cluster, starts `tunnel-client join` with a small sample HTTP upstream, then sends requests
 * to that upstream through both hub entry points (CONNECT and the path proxy), prints what came back,
 * the cluster's path and the timings next to a direct request, and stops everything.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loopbackServeArgs } from '../bench/serve-args.js';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { relayedReasonText } from '../shared/net/tunnel-endpoint/relayed-reasons.js';
import { getViaConnect, httpsGet } from './clients.js';

const here = dirname(fileURLToPath(import.meta.url));
const RELAY_BIN = join(here, '../relay/cli/main.js');
const CLIENT_BIN = join(here, '../tunnel-client/cli/main.js');
const children: ChildProcess[] = [];

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('TUNNEL_') && !/^(https?|no)_proxy$/i.test(k)) e[k] = v;
  }
  return { ...e, ...extra };
}

function start(bin: string, args: string[], e: NodeJS.ProcessEnv): ChildProcess {
  const c = spawn(process.execPath, [...NODE_FLAGS, bin, ...args], {
    env: e,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(c);
  return c;
}

/** `direct`, or `relayed (443-only: --egress 443-only: no UDP at all)`: the path and, relayed, why. */
function pathWithReason(cluster: Record<string, unknown>): string {
  const detail = cluster.pathDetail as { reason?: string | null } | null | undefined;
  const reason = cluster.path === 'relayed' ? detail?.reason : null;
  return reason ? `${String(cluster.path)} (${relayedReasonText(reason)})` : String(cluster.path);
}

async function runJson(bin: string, args: string[], e: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const c = start(bin, [...args, '--output', 'json'], e);
  let out = '';
  let err = '';
  c.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  c.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const [code] = (await once(c, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${args.join(' ')} failed: ${err.trim()}`);
  return JSON.parse(out) as Record<string, unknown>;
}

function firstLine(c: ChildProcess, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const t = setTimeout(() => reject(new Error('the relay did not start in time')), ms);
    c.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        resolve(buf.slice(0, nl));
      }
    });
    c.once('exit', () => reject(new Error('the relay exited during start-up')));
  });
}

async function sampleUpstream(): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ hello: 'from the sample upstream behind the agent', path: req.url }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tunnel-demo-'));
  const up = await sampleUpstream();
  try {
    say(`1. sample upstream (the "cluster API") on http://127.0.0.1:${up.port}`);
    const relay = start(RELAY_BIN, loopbackServeArgs(join(dir, 'relay')), env());
    relay.stderr?.resume();
    const ready = JSON.parse(await firstLine(relay, 20_000)) as {
      url: string;
      caPin: string;
      adminKey: string;
    };
    say(`2. relay listening on ${ready.url} (CA pin ${ready.caPin.slice(0, 23)}...)`);
    const adminEnv = env({
      TUNNEL_RELAY_URL: ready.url,
      TUNNEL_ACCESS_KEY: ready.adminKey,
      TUNNEL_RELAY_CA_PIN: ready.caPin,
    });
    const created = await runJson(RELAY_BIN, ['cluster', 'create', 'demo'], adminEnv);
    const joinCmd = (created.bootstrap as { joinCommand: string }).joinCommand;
    say('3. cluster "demo" created; join command (PSK elided):');
    say(`   ${joinCmd.replace(/tpsk_\S+/, 'tpsk_...')} --upstream http://127.0.0.1:${up.port}`);
    const agentArgs = joinCommandWords(joinCmd);
    const agent = start(
      CLIENT_BIN,
      [...agentArgs, '--upstream', `http://127.0.0.1:${up.port}`, '--state-dir', join(dir, 'agent')],
      env(),
    );
    agent.stdout?.resume();
    agent.stderr?.resume();
    const t0 = performance.now();
    let cluster: Record<string, unknown> = {};
    for (;;) {
      cluster = await runJson(RELAY_BIN, ['cluster', 'get', 'demo'], adminEnv);
      if (cluster.connected === true) break;
      if (performance.now() - t0 > 30_000) throw new Error('the agent did not connect within 30 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    say(
      `4. agent connected after ${(performance.now() - t0).toFixed(0)} ms: path=${pathWithReason(cluster)}, ` +
        `address=${cluster.address}`,
    );
    const kc = await runJson(RELAY_BIN, ['kubeconfig', 'demo'], adminEnv);
    const clusters = kc.clusters as Array<{ cluster: Record<string, string> }>;
    const ca = Buffer.from(clusters[0]?.cluster['certificate-authority-data'] ?? '', 'base64').toString();

    const direct = await getDirect(up.port);
    const target = `demo.clusters.local:${up.port}`;
    const viaConnect = await getViaConnect(ready.url, ca, ready.adminKey, target, '/hello');
    const pathUrl = `${ready.url}/api/v1/clusters/demo/proxy/hello`;
    const viaPath = await httpsGet(pathUrl, ca, ready.adminKey);
    say(`5. CONNECT ${target}  ->  GET /hello`);
    say(`   ${viaConnect.status} ${viaConnect.body}`);
    say(`6. GET ${pathUrl}`);
    say(`   ${viaPath.status} ${viaPath.body}`);
    // A few more rounds for steadier timings (the first ones include connection set-up).
    const rounds = 20;
    const times = { direct: [] as number[], connect: [] as number[], path: [] as number[] };
    for (let i = 0; i < rounds; i++) {
      times.direct.push((await getDirect(up.port)).ms);
      times.connect.push((await getViaConnect(ready.url, ca, ready.adminKey, target, '/hello')).ms);
      times.path.push((await httpsGet(pathUrl, ca, ready.adminKey)).ms);
    }
    const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? 0;
    const after = await runJson(RELAY_BIN, ['cluster', 'get', 'demo'], adminEnv);
    say(
      `7. median of ${rounds} requests (new connection each): direct ${med(times.direct).toFixed(1)} ms, ` +
        `CONNECT ${med(times.connect).toFixed(1)} ms, path proxy ${med(times.path).toFixed(1)} ms (first: ` +
        `direct ${direct.ms.toFixed(1)}, CONNECT ${viaConnect.ms.toFixed(1)}, path ${viaPath.ms.toFixed(1)})`,
    );
    say(
      `   tunnel: path=${pathWithReason(after)}, hub-measured RTT ${after.rttMs === null || after.rttMs === undefined ? 'not measured yet (the hub probes every 5 s)' : `${after.rttMs} ms`} (CONNECT and path proxy timings include a TLS handshake with the relay)`,
    );
    say('8. stopping agent and relay');
    agent.kill('SIGTERM');
    relay.kill('SIGTERM');
    await Promise.all([once(agent, 'exit'), once(relay, 'exit')]);
    say('done');
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    up.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function getDirect(port: number): Promise<{ ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/hello', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: performance.now() - started }));
      })
      .on('error', reject);
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${(err as Error).message}\n`);
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  process.exit(1);
});
