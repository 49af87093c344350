/**
 * What the relay mesh costs a hub request. Two `tunnel-relay serve` replicas share a throw-away PostgreSQL
 * and the fleet's hub key, certificate and mesh key; one agent (a real `tunnel-client`, upstream a byte
 * source) holds its session on replica A. The same requests go to A (served locally: the baseline, same run)
 * and to B (forwarded one hop over the mesh to A):
 * - a 100-byte round trip on an established CONNECT connection (p50 / p90 / p99 after warm-up);
 * - a new CONNECT connection with one small request (TLS handshake, stream open, first byte);
 * - one CONNECT download, and the replicas' CPU per GiB.
 * Target (issue 15): a request crossing the mesh adds p99 <= 1 ms on loopback.
 * As root (the throw-away PostgreSQL runs as the postgres user). Run:
 *   npm run build:tools && node dist/bench/mesh-bench.js [MiB per download, default 256] [samples, default 2000]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startThrowawayPostgres } from '../test/helpers/postgres.js';
import { fleetServeArgs, writeFleetFiles } from '../test/helpers/relay-fleet.js';
import { describeMachine } from './machine.js';
import {
  CLIENT_BIN,
  children,
  connectVia,
  type Dial,
  download,
  echoPipe,
  firstLine,
  latency,
  procCpu,
  runJson,
  start,
  startServe,
  UPSTREAM_SRC,
  warmUp,
} from './tunnel-fixture.js';

const MIB = Number(process.argv[2] ?? '256');
const SAMPLES = Number(process.argv[3] ?? '2000');

interface Replica {
  pid: number | undefined;
  url: string;
  adminKey: string | null;
}

async function startReplica(args: string[], dataDir: string): Promise<Replica> {
  const { proc, ready } = await startServe(dataDir, args);
  return { pid: proc.pid, url: ready.url, adminKey: ready.adminKey };
}

/** Joins an agent for `name` through `relayUrl`, serving `upPort`, and waits until it is connected. */
async function startAgent(env: NodeJS.ProcessEnv, dir: string, name: string, upPort: number, pin: string) {
  const created = await runJson(['cluster', 'create', name], env);
  const psk = (created.bootstrap as { psk: string }).psk;
  const agent = start(
    process.execPath,
    [
      CLIENT_BIN,
      'join',
      '--relay',
      env.TUNNEL_RELAY_URL ?? '',
      '--cluster',
      name,
      '--ca-pin',
      pin,
      '--upstream',
      `http://127.0.0.1:${upPort}`,
      '--state-dir',
      join(dir, 'agent'),
    ],
    { ...process.env, TUNNEL_CLIENT_PSK: psk },
  );
  for (let i = 0; ; i++) {
    const c = await runJson(['cluster', 'get', name], env);
    if (c.connected === true) return agent;
    if (i > 150) throw new Error('agent did not connect');
    await new Promise((r) => setTimeout(r, 200));
  }
}

function row(cells: Array<string | number>): string {
  return `| ${cells.join(' | ')} |`;
}

const ms = (v: number): string => v.toFixed(3);

async function measure(label: string, dial: Dial, replicas: Replica[]) {
  const pipe = await echoPipe(dial);
  await warmUp(() => pipe.rtt(), 2_000);
  const established = await latency(() => pipe.rtt(), SAMPLES);
  pipe.close();
  const fresh = await latency(() => download(dial, 100), Math.min(300, SAMPLES));
  const cpu0 = replicas.map((r) => procCpu(r.pid));
  const t0 = performance.now();
  const bytes = await download(dial, MIB * 1024 * 1024);
  const secs = (performance.now() - t0) / 1000;
  const cpu = replicas.map((r, i) => procCpu(r.pid) - (cpu0[i] ?? 0));
  const gib = bytes / 2 ** 30;
  return {
    label,
    established,
    fresh,
    mbps: bytes / 1e6 / secs,
    cpuPerGib: cpu.map((c) => c / gib),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-bench-'));
  const server = await startThrowawayPostgres();
  try {
    console.log(`machine: ${describeMachine()}`);
    const db = await server.createDatabase('relay');
    const passwordFile = join(dir, 'pg-password');
    writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
    const url = `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`;
    const fleet = writeFleetFiles(dir);
    const args = fleetServeArgs(fleet, { url, passwordFile });
    const a = await startReplica(args, join(dir, 'a'));
    const b = await startReplica(args, join(dir, 'b'));
    const adminKey = a.adminKey ?? '';
    const up = start(process.execPath, ['-e', UPSTREAM_SRC]);
    const upPort = Number(await firstLine(up));
    const envA = {
      ...process.env,
      TUNNEL_RELAY_URL: a.url,
      TUNNEL_ACCESS_KEY: adminKey,
      TUNNEL_RELAY_CA_PIN: fleet.caPin,
    };
    await startAgent(envA, dir, 'bench', upPort, fleet.caPin);
    const target = `bench.clusters.local:${upPort}`;
    const local = await measure('via A (agent here)', connectVia(a.url, fleet.caPem, adminKey, target), [
      a,
      b,
    ]);
    const meshed = await measure(
      'via B (one mesh hop to A)',
      connectVia(b.url, fleet.caPem, adminKey, target),
      [a, b],
    );
    console.log(
      `\none agent on replica A; ${SAMPLES} round trips after 2 s of warm-up; ${MIB} MiB download\n`,
    );
    console.log(
      row([
        'path',
        'established p50 / p90 / p99 ms',
        'new connection p50 / p99 ms',
        'download MB/s',
        'A / B CPU s per GiB',
      ]),
    );
    console.log(row(['---', '---', '---', '---', '---']));
    for (const r of [local, meshed]) {
      console.log(
        row([
          r.label,
          `${ms(r.established.p50)} / ${ms(r.established.p90)} / ${ms(r.established.p99)}`,
          `${ms(r.fresh.p50)} / ${ms(r.fresh.p99)}`,
          r.mbps.toFixed(1),
          r.cpuPerGib.map((c) => c.toFixed(2)).join(' / '),
        ]),
      );
    }
    const added = meshed.established.p99 - local.established.p99;
    console.log(
      `\nmesh hop adds: established p50 ${ms(meshed.established.p50 - local.established.p50)} ms, p99 ${ms(added)} ms (target <= 1 ms: ${added <= 1 ? 'met' : 'not met'}); download ${((meshed.mbps / local.mbps) * 100).toFixed(0)} % of local`,
    );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
});
