/**
 * Agent egress through an HTTP CONNECT proxy (short). Real binaries: `tunnel-relay serve`, tinyproxy, and
 * two `tunnel-client` agents with the same byte-source upstream: one connects to the relay directly, the
 * other with HTTPS_PROXY set (its /derp WebSocket and API calls go through tinyproxy). This process
 * downloads through the relay's CONNECT entry to each agent (1 and 8 streams) and times small requests
 * (new connection each), and times the agent-side control-plane call (GET /healthz on a fresh TLS
 * connection, CA pin checked) direct vs through the proxy. Ratios are against the direct agent measured
 * in the same run. `node dist/bench/proxy-egress-bench.js [MiB per stream, default 32]`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { RelayClient } from '../shared/kit/http/client.js';
import { resolveProxySettings } from '../shared/kit/proxy/proxy-config.js';
import { relayConnectVia } from '../shared/kit/proxy/transports.js';
import { stopChildren } from './bench-child.js';
import { describeMachine } from './machine.js';
import {
  CLIENT_BIN,
  children,
  connectVia,
  type Dial,
  download,
  freePort,
  latency,
  runJson,
  start,
  startRelayAndUpstream,
} from './tunnel-fixture.js';

const MB = Number(process.argv[2] ?? '32');

async function bulk(dial: Dial, streams: number): Promise<number> {
  const bytes = MB * 1024 * 1024;
  const t0 = performance.now();
  const got = await Promise.all(Array.from({ length: streams }, () => download(dial, bytes)));
  return got.reduce((a, b) => a + b, 0) / 1e6 / ((performance.now() - t0) / 1000);
}

/**
 * A minimal CONNECT forwarder in this process with Nagle off on both sides: the reference that tells
 * the agent's own cost apart from the proxy's forwarding behaviour.
 */
async function nodeConnectProxy(): Promise<number> {
  const server = net.createServer((c) => {
    c.setNoDelay(true);
    c.on('error', () => {});
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      c.off('data', onData);
      const target = /^CONNECT (\S+) /.exec(head)?.[1] ?? '';
      const i = target.lastIndexOf(':');
      const up = net.connect(
        { host: target.slice(0, i), port: Number(target.slice(i + 1)), noDelay: true },
        () => {
          c.write('HTTP/1.1 200 Connection established\r\n\r\n');
          c.pipe(up).pipe(c);
        },
      );
      up.on('error', () => c.destroy());
      c.on('close', () => up.destroy());
    };
    c.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  server.unref();
  return (server.address() as net.AddressInfo).port;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-egress-bench-'));
  try {
    console.log(`machine: ${describeMachine()}`);
    const { ready, upPort, env } = await startRelayAndUpstream(dir);
    const relayPort = Number(new URL(ready.url).port);
    const proxyPort = await freePort();
    writeFileSync(
      join(dir, 'tinyproxy.conf'),
      `Port ${proxyPort}\nListen 127.0.0.1\nTimeout 600\nLogLevel Warning\nLogFile "${join(dir, 'tp.log')}"\nMaxClients 100\nConnectPort ${relayPort}\n`,
    );
    start('tinyproxy', ['-d', '-c', join(dir, 'tinyproxy.conf')]);
    await new Promise((r) => setTimeout(r, 300));
    const proxyUrl = `http://127.0.0.1:${proxyPort}`;
    const nodeProxyUrl = `http://127.0.0.1:${await nodeConnectProxy()}`;
    for (const [name, agentEnv] of [
      ['direct', { ...process.env, HTTPS_PROXY: '', https_proxy: '' }],
      ['proxied', { ...process.env, HTTPS_PROXY: proxyUrl, NO_PROXY: '', no_proxy: '' }],
      ['nodeproxied', { ...process.env, HTTPS_PROXY: nodeProxyUrl, NO_PROXY: '', no_proxy: '' }],
    ] as const) {
      const created = await runJson(['cluster', 'create', name], env);
      const joinArgs = joinCommandWords((created.bootstrap as { joinCommand: string }).joinCommand);
      start(
        process.execPath,
        [CLIENT_BIN, ...joinArgs, '--upstream', `http://127.0.0.1:${upPort}`, '--state-dir', join(dir, name)],
        agentEnv,
      );
    }
    for (const name of ['direct', 'proxied', 'nodeproxied']) {
      for (let i = 0; ; i++) {
        const c = await runJson(['cluster', 'get', name], env);
        if (c.connected === true) break;
        if (i > 150) throw new Error(`agent ${name} did not connect`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const tpLog = readFileSync(join(dir, 'tp.log'), 'utf8');
    if (/ERROR/.test(tpLog)) console.log(`tinyproxy log: ${tpLog.slice(0, 400)}`);
    const via = (name: string) =>
      connectVia(ready.url, undefined, ready.adminKey, `${name}.clusters.local:${upPort}`);

    console.log(`\nhub -> agent download through the relay, ${MB} MiB per stream (MB/s = 10^6 bytes/s)`);
    console.log('| agent egress | streams | MB/s | vs direct agent |');
    console.log('|---|---|---|---|');
    for (const streams of [1, 8]) {
      const d = await bulk(via('direct'), streams);
      const p = await bulk(via('proxied'), streams);
      const n = await bulk(via('nodeproxied'), streams);
      console.log(`| direct | ${streams} | ${d.toFixed(1)} | 100% |`);
      console.log(`| via tinyproxy | ${streams} | ${p.toFixed(1)} | ${((p / d) * 100).toFixed(0)}% |`);
      console.log(
        `| via Node CONNECT forwarder | ${streams} | ${n.toFixed(1)} | ${((n / d) * 100).toFixed(0)}% |`,
      );
    }

    console.log(
      '\nsmall request through the relay to the agent (GET of 100 bytes, new CONNECT each), 200 samples',
    );
    const ld = await latency(() => download(via('direct'), 100), 200);
    const lp = await latency(() => download(via('proxied'), 100), 200);
    const ln = await latency(() => download(via('nodeproxied'), 100), 200);
    console.log('| agent egress | p50 ms | p99 ms | added p50 ms | added p99 ms |');
    console.log('|---|---|---|---|---|');
    for (const [name, r] of [
      ['direct', ld],
      ['via tinyproxy', lp],
      ['via Node CONNECT forwarder', ln],
    ] as const) {
      console.log(
        `| ${name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.p50 - ld.p50).toFixed(2)} | ${(r.p99 - ld.p99).toFixed(2)} |`,
      );
    }

    console.log(
      '\nagent control-plane call: GET /healthz on a fresh TLS connection (CA pin checked), 100 samples',
    );
    const call = (proxy: string | undefined) => async () => {
      const connectVia = relayConnectVia(resolveProxySettings({ flag: proxy, env: {} }));
      const client = new RelayClient({
        baseUrl: ready.url,
        trust: { kind: 'pin', pin: ready.caPin },
        connectVia,
      });
      try {
        await client.raw('GET', '/healthz', { token: null });
      } finally {
        await client.close();
      }
    };
    const cd = await latency(call(undefined), 100);
    const cp = await latency(call(proxyUrl), 100);
    console.log('| path | p50 ms | p99 ms | p50 vs direct |');
    console.log('|---|---|---|---|');
    console.log(`| direct | ${cd.p50.toFixed(2)} | ${cd.p99.toFixed(2)} | 1.00x |`);
    console.log(
      `| via tinyproxy | ${cp.p50.toFixed(2)} | ${cp.p99.toFixed(2)} | ${(cp.p50 / cd.p50).toFixed(2)}x |`,
    );
  } finally {
    await stopChildren(children);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`proxy egress bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
