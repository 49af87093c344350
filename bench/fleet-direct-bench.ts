/**
 * The fleet's direct path against the single relay's, in the same run (issue 31). A network namespace on a veth
 * (MTU 1,500) holds a byte source and two `tunnel-client` agents serving it; on the host side of the veth run
 * (a) one `tunnel-relay serve` (SQLite, its own UDP port) and (b) two replicas on a throw-away PostgreSQL with the
 * fleet's hub key, certificate and mesh key, each with its own UDP port. One agent joins (a), the other joins
 * replica A of (b), which so holds its session; both go direct (WireGuard over UDP across the veth). The same
 * measurements go to (a) and to replica A, taken in turns so both meet the same machine noise:
 * - 100-byte round trips on an established CONNECT connection (p50 / p90 / p99);
 * - a new CONNECT connection with one small request (TLS handshake, stream open, first byte);
 * - CONNECT downloads (rounds alternating between the two; median MB/s), and the relay's CPU per GiB.
 * Ratios are b/a. As root (namespaces; the throw-away PostgreSQL runs as the postgres user). Run:
 *   npm run build:tools && node dist/bench/fleet-direct-bench.js [MiB per download, default 64] [samples, default 1000]
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNetns, type Netns } from '../test/helpers/netns.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../test/helpers/postgres.js';
import { fleetServeArgs, writeFleetFiles } from '../test/helpers/relay-fleet.js';
import { describeMachine } from './machine.js';
import {
  agentStatus,
  createCluster,
  freeUdpPort,
  joinAgent,
  type NamespaceAgent,
  relayCa,
  type SiteRelay,
  startIn,
  waitFor,
} from './netns-agents.js';
import {
  children,
  download,
  echoPipe,
  firstLine,
  latencyInTurns,
  procCpu,
  type Quantiles,
  RELAY_BIN,
  start,
  UPSTREAM_SRC,
  warmUp,
} from './tunnel-fixture.js';

const MIB = Number(process.argv[2] ?? '64');
const SAMPLES = Number(process.argv[3] ?? '1000');
const ROUNDS = 3;

interface Served {
  proc: ChildProcess;
  url: string;
  adminKey: string;
  caPin: string;
  udpPort: number;
}

/** `tunnel-relay serve` on the veth's host address with its own UDP port (STUN off, warn logs). */
async function serveOn(host: string, dataDir: string, extra: string[] = []): Promise<Served> {
  const udpPort = await freeUdpPort(host);
  const proc = start(process.execPath, [
    RELAY_BIN,
    ...['serve', '--output', 'json', '--listen', `${host}:0`, '--data-dir', dataDir],
    ...['--udp-port', String(udpPort), '--stun-port', 'off', '--log-level', 'warn'],
    ...extra,
  ]);
  const ready = JSON.parse(await firstLine(proc)) as { url: string; caPin: string; adminKey?: string | null };
  return { proc, url: ready.url, adminKey: ready.adminKey ?? '', caPin: ready.caPin, udpPort };
}

function adminEnv(relay: Served): NodeJS.ProcessEnv {
  return {
    ...process.env,
    TUNNEL_RELAY_URL: relay.url,
    TUNNEL_ACCESS_KEY: relay.adminKey,
    TUNNEL_RELAY_CA_PIN: relay.caPin,
  };
}

/** Joins agent `name` in the namespace through `relay` and waits until it is direct to `relay`'s UDP port. */
async function directAgent(o: {
  ns: Netns;
  relay: Served;
  env: NodeJS.ProcessEnv;
  name: string;
  upPort: number;
  dir: string;
}): Promise<NamespaceAgent> {
  const joinArgs = await createCluster(o.name, o.env);
  const ca = await relayCa(o.name, o.env);
  const caFile = join(o.dir, `${o.name}-ca.pem`);
  writeFileSync(caFile, ca);
  const site: SiteRelay = { url: o.relay.url, adminKey: o.relay.adminKey, ca, caFile };
  const a = joinAgent(o.ns, site, { name: o.name, joinArgs, upPort: o.upPort, dir: o.dir, extra: [] });
  const port = `:${o.relay.udpPort}`;
  await waitFor(
    `${o.name} direct to UDP port ${o.relay.udpPort}`,
    () => {
      const s = agentStatus(a.stateDir);
      return s.path === 'direct' && (s.pathDetail?.remote ?? '').endsWith(port);
    },
    60_000,
  );
  return a;
}

/** Replicas A and B on a throw-away PostgreSQL, sharing the fleet's files (certificate valid for `host`). */
async function startFleet(pg: ThrowawayPostgres, host: string, dir: string) {
  const db = await pg.createDatabase('relay');
  const passwordFile = join(dir, 'pg-password');
  writeFileSync(passwordFile, `${pg.password}\n`, { mode: 0o600 });
  const url = `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`;
  const files = writeFleetFiles(dir, [host]);
  const args = fleetServeArgs(files, { url, passwordFile });
  const a = await serveOn(host, join(dir, 'a'), args);
  const b = await serveOn(host, join(dir, 'b'), args);
  return { a, b };
}

interface PathResult {
  established: Quantiles;
  fresh: Quantiles;
  mbps: number;
  cpuPerGib: number;
}

/** Established and new-connection latency of both paths in turns, then alternating download rounds. */
async function measure(paths: readonly { agent: NamespaceAgent; relayPid: number | undefined }[]) {
  const pipes = await Promise.all(paths.map((p) => echoPipe(p.agent.dial)));
  await warmUp(async () => {
    for (const pipe of pipes) await pipe.rtt();
  }, 2_000);
  const established = await latencyInTurns(
    pipes.map((pipe) => () => pipe.rtt()),
    SAMPLES,
  );
  for (const pipe of pipes) pipe.close();
  const fresh = await latencyInTurns(
    paths.map((p) => () => download(p.agent.dial, 100)),
    Math.min(200, SAMPLES),
  );
  const rates = paths.map((): number[] => []);
  const cpu = paths.map(() => 0);
  for (let round = 0; round < ROUNDS; round++)
    for (const [i, p] of paths.entries()) {
      const cpu0 = procCpu(p.relayPid);
      const t0 = performance.now();
      const bytes = await download(p.agent.dial, MIB * 1024 * 1024);
      rates[i]?.push(bytes / 1e6 / ((performance.now() - t0) / 1000));
      cpu[i] = (cpu[i] ?? 0) + procCpu(p.relayPid) - cpu0;
    }
  const median = (v: number[]): number => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)] ?? 0;
  return paths.map(
    (_p, i): PathResult => ({
      established: established[i] ?? { p50: 0, p90: 0, p99: 0 },
      fresh: fresh[i] ?? { p50: 0, p90: 0, p99: 0 },
      mbps: median(rates[i] ?? []),
      cpuPerGib: (cpu[i] ?? 0) / ((ROUNDS * MIB) / 1024),
    }),
  );
}

const ms = (v: number): string => v.toFixed(3);
const row = (cells: Array<string | number>): string => `| ${cells.join(' | ')} |`;
const times = (b: number, a: number): string => (a > 0 ? `${(b / a).toFixed(2)}x` : 'n/a');

function report(single: PathResult, fleet: PathResult): void {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
  console.log(
    `\none agent per relay, direct (WireGuard over UDP across a veth, MTU 1,500); ${SAMPLES} round trips in turns after 2 s of warm-up; ${ROUNDS} alternating downloads of ${MIB} MiB each; load average at the end ${load}\n`,
  );
  console.log(
    row([
      'path',
      'established p50 / p90 / p99 ms',
      'new connection p50 / p99 ms',
      'download MB/s',
      'relay CPU s per GiB',
    ]),
  );
  console.log(row(['---', '---', '---', '---', '---']));
  const line = (label: string, r: PathResult) =>
    row([
      label,
      `${ms(r.established.p50)} / ${ms(r.established.p90)} / ${ms(r.established.p99)}`,
      `${ms(r.fresh.p50)} / ${ms(r.fresh.p99)}`,
      r.mbps.toFixed(1),
      r.cpuPerGib.toFixed(2),
    ]);
  console.log(line('(a) single relay (SQLite)', single));
  console.log(line('(b) fleet replica holding the session (PostgreSQL, 2 replicas)', fleet));
  const e = (k: keyof Quantiles) => times(fleet.established[k], single.established[k]);
  console.log(
    row([
      'b/a',
      `${e('p50')} / ${e('p90')} / ${e('p99')}`,
      `${times(fleet.fresh.p50, single.fresh.p50)} / ${times(fleet.fresh.p99, single.fresh.p99)}`,
      times(fleet.mbps, single.mbps),
      times(fleet.cpuPerGib, single.cpuPerGib),
    ]),
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-direct-bench-'));
  const ns = await createNetns('fdb', { subnet: 'auto' });
  let pg: ThrowawayPostgres | null = null;
  try {
    console.log(`machine: ${describeMachine()}`);
    const host = ns.hostAddress ?? '';
    execFileSync('ip', ['link', 'set', ns.hostIf ?? '', 'mtu', '1500']);
    await ns.exec('ip', ['link', 'set', ns.nsIf ?? '', 'mtu', '1500']);
    const upPort = Number(await firstLine(startIn(ns, ['-e', UPSTREAM_SRC])));
    const single = await serveOn(host, join(dir, 'single'));
    pg = await startThrowawayPostgres();
    const fleet = await startFleet(pg, host, dir);
    const agentA = await directAgent({
      ns,
      relay: single,
      env: adminEnv(single),
      name: 'single',
      upPort,
      dir,
    });
    const agentB = await directAgent({
      ns,
      relay: fleet.a,
      env: adminEnv(fleet.a),
      name: 'fleet',
      upPort,
      dir,
    });
    const [a, b] = await measure([
      { agent: agentA, relayPid: single.proc.pid },
      { agent: agentB, relayPid: fleet.a.proc.pid },
    ]);
    if (a && b) report(a, b);
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await pg?.stop();
    await ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
});
