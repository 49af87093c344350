/**
 * Hub -> agent proxy benchmark (short). Real binaries: `tunnel-relay serve` and a `tunnel-client`
 * agent whose upstream is a byte source in its own process; the client (this process) downloads
 * through CONNECT with 1 and 16 concurrent streams, against the same download done directly and
 * through socat (a user-space TCP forwarder) in the same run. Then p50/p99 of a small request
 * (new connection each time) direct vs CONNECT vs the path proxy.
 * `node dist/bench/proxy-bench.js [MB per stream, default 64]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopChildren } from './bench-child.js';
import { describeMachine } from './machine.js';
import {
  children,
  connectVia,
  type Dial,
  direct,
  download,
  latency,
  procCpu,
  start,
  startBenchAgent,
  startRelayAndUpstream,
} from './tunnel-fixture.js';

const MB = Number(process.argv[2] ?? '64');

/** Relay and agent processes whose CPU is reported next to the client's. */
const watched: { relay?: number; agent?: number } = {};

interface BulkResult {
  mbps: number;
  cpu: number;
  relayCpu: number;
  agentCpu: number;
}

async function bulk(dial: Dial, streams: number): Promise<BulkResult> {
  const bytes = MB * 1024 * 1024;
  const cpu0 = process.cpuUsage();
  const r0 = procCpu(watched.relay);
  const a0 = procCpu(watched.agent);
  const t0 = performance.now();
  const got = await Promise.all(Array.from({ length: streams }, () => download(dial, bytes)));
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  const total = got.reduce((a, b) => a + b, 0);
  return {
    mbps: total / 1e6 / secs,
    cpu: (c.user + c.system) / 1e6,
    relayCpu: procCpu(watched.relay) - r0,
    agentCpu: procCpu(watched.agent) - a0,
  };
}

function pathGet(url: string, ca: string, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, agent: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      })
      .on('error', reject);
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'proxy-bench-'));
  try {
    console.log(`machine: ${describeMachine()}`);
    const { relay, ready, upPort, env } = await startRelayAndUpstream(dir);
    watched.relay = relay.pid;
    const { agent: agentProc, ca } = await startBenchAgent(env, dir, upPort);
    watched.agent = agentProc.pid;
    const socatPort = 20000 + Math.floor(Math.random() * 20000);
    start('socat', [`TCP-LISTEN:${socatPort},bind=127.0.0.1,fork,reuseaddr`, `TCP:127.0.0.1:${upPort}`]);
    await new Promise((r) => setTimeout(r, 300));

    const via = connectVia(ready.url, ca, ready.adminKey, `bench.clusters.local:${upPort}`);
    console.log(`\nbulk download, ${MB} MiB per stream (MB/s = 10^6 bytes/s; client-process CPU seconds)`);
    console.log('| path | streams | MB/s | vs direct | client CPU s | relay CPU s | agent CPU s |');
    console.log('|---|---|---|---|---|---|---|');
    for (const streams of [1, 16]) {
      const d = await bulk(direct(upPort), streams);
      const s = await bulk(direct(socatPort), streams);
      const v = await bulk(via, streams);
      for (const [name, r] of [
        ['direct TCP', d],
        ['socat TCP forward', s],
        ['CONNECT via relay + agent', v],
      ] as const) {
        const extra = name.startsWith('CONNECT')
          ? `${r.relayCpu.toFixed(2)} | ${r.agentCpu.toFixed(2)}`
          : '- | -';
        console.log(
          `| ${name} | ${streams} | ${r.mbps.toFixed(1)} | ${((r.mbps / d.mbps) * 100).toFixed(0)}% | ${r.cpu.toFixed(2)} | ${extra} |`,
        );
      }
    }
    console.log('\nsmall request (GET of 100 bytes, new connection each), 200 samples');
    const ld = await latency(() => download(direct(upPort), 100), 200);
    const ls = await latency(() => download(direct(socatPort), 100), 200);
    const lc = await latency(() => download(via, 100), 200);
    const lp = await latency(
      () => pathGet(`${ready.url}/api/v1/clusters/bench/proxy/100`, ca, ready.adminKey),
      200,
    );
    console.log('| path | p50 ms | p99 ms | added p50 ms | added p99 ms |');
    console.log('|---|---|---|---|---|');
    for (const [name, r] of [
      ['direct TCP', ld],
      ['socat', ls],
      ['CONNECT', lc],
      ['path proxy', lp],
    ] as const) {
      console.log(
        `| ${name} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.p50 - ld.p50).toFixed(2)} | ${(r.p99 - ld.p99).toFixed(2)} |`,
      );
    }
  } finally {
    await stopChildren(children);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`proxy bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
