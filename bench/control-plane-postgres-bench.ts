/**
 * Control plane on PostgreSQL: the relay (`--store postgres://`, self-signed TLS, info-level request logs to
 * /dev/null) in a child process, on a throw-away PostgreSQL server with production durability
 * (bench-postgres.ts), driven over kept-alive HTTPS from this process with 16 concurrent requests:
 * - baseline: GET /healthz (no store work);
 * - registrations/s (PSK check, address allocation, credential: one SERIALIZABLE transaction each);
 * - lease renewals/s with 10,000 registered agents, and what 10,000 agents renewing every 60 s cost as % of
 *   one core, for the relay (target < 5 %, as on SQLite) and for PostgreSQL beside it.
 * CPU is read from /proc (process-cpu.ts): the relay's own, and the postmaster's with its backends.
 * Run as root: npm run build:tools && node dist/bench/control-plane-postgres-bench.js [agents=10000] [registrations=2000]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { Store } from '../relay/control/store/types.js';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { hashSecret, newId, newSecret } from '../relay/ops/secrets.js';
import { openStore } from '../relay/start/server.js';
import { keyToBase64 } from '../shared/keys.js';
import { serveOrMain, serveRelayChild, stopChild } from './bench-child.js';
import { type BenchPostgres, startBenchPostgres } from './bench-postgres.js';
import { describeMachine, ratio } from './machine.js';
import { cpuMs, drive, treeCpuMs } from './process-cpu.js';
import { registerSeeded } from './seed-agents.js';

const CONCURRENCY = 16;
/** Seeding writes through the store one at a time: registrations all update the address pool's one row. */
const SEED_CONCURRENCY = 1;
const PASSWORD_ENV = 'TUNNEL_RELAY_STORE_PASSWORD';
/**
 * A random 32-byte public key, below 2^254 so it is a canonical Curve25519 encoding (the relay refuses others);
 * the control plane stores keys and does no curve math on them.
 */
const randomKey = (): string => {
  const b = randomBytes(32);
  b[31]! &= 0x3f;
  return keyToBase64(b);
};

function relayConfig(dir: string, storeUrl: string) {
  return resolveRelayConfig({
    flags: {
      listen: '127.0.0.1:0',
      dataDir: dir,
      udpPort: 'off',
      stunPort: 'off',
      logLevel: 'info',
      store: storeUrl,
    },
    env: process.env,
  });
}

function serve(dir: string, storeUrl: string): Promise<void> {
  return serveRelayChild(relayConfig(dir, storeUrl));
}

/** `agents` registered agents (their credentials) and `registrations` clusters waiting with fresh PSKs. */
async function seed(
  store: Store,
  agents: number,
  registrations: number,
): Promise<{ creds: string[]; psks: string[] }> {
  const now = Date.now();
  const audit = { at: now, actor: 'bench', action: 'seed', target: '', source: 'local', detail: {} };
  const create = async (name: string): Promise<string> => {
    const psk = newSecret('psk');
    const pskRow = { id: newId('p_'), hash: hashSecret(psk), expiresAt: now + 86_400_000 };
    await store.createCluster({ name, group: 'default', displayName: name, createdAt: now }, pskRow, audit);
    return psk;
  };
  const creds: string[] = new Array(agents);
  await drive(agents, SEED_CONCURRENCY, async (i) => {
    const psk = await create(`agent-${i}`);
    const seed = {
      cluster: `agent-${i}`,
      psk,
      publicKey: randomKey(),
      presharedKey: randomKey(),
      now,
      audit,
    };
    creds[i] = await registerSeeded(store, seed);
  });
  const psks: string[] = new Array(registrations);
  await drive(registrations, SEED_CONCURRENCY, async (i) => {
    psks[i] = await create(`new-${i}`);
  });
  return { creds, psks };
}

async function startChild(dir: string, pgs: BenchPostgres) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', dir, pgs.url], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, [PASSWORD_ENV]: pgs.password },
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
  });
  const { url, caPem } = JSON.parse(line) as { url: string; caPem: string };
  return { child, url, caPem };
}

interface Row {
  label: string;
  n: number;
  perSec: number;
  relayMsPerOp: number;
  pgMsPerOp: number;
}

async function main(): Promise<void> {
  const agents = Number(process.argv[2] ?? 10_000);
  const registrations = Number(process.argv[3] ?? 2_000);
  const dir = mkdtempSync(join(tmpdir(), 'cp-pg-bench-'));
  console.log(`machine: ${describeMachine()}`);
  const pgs = await startBenchPostgres();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      pgs.stop();
      rmSync(dir, { recursive: true, force: true });
      process.exit(1);
    });
  }
  process.env[PASSWORD_ENV] = pgs.password;
  try {
    const seedStart = performance.now();
    // The seed's own connections commit without waiting for the disk (node-postgres reads PGOPTIONS); the
    // relay's do not.
    process.env.PGOPTIONS = '-c synchronous_commit=off';
    const store = await openStore(relayConfig(dir, pgs.url));
    const { creds, psks } = await seed(store, agents, registrations);
    await store.close();
    delete process.env.PGOPTIONS;
    const seedS = (performance.now() - seedStart) / 1000;
    console.log(`seeded ${agents} agents + ${registrations} PSKs in ${seedS.toFixed(1)} s`);
    const { child, url, caPem } = await startChild(dir, pgs);
    const keep = new Agent({ connect: { ca: caPem }, connections: CONCURRENCY });
    const call = async (method: 'GET' | 'POST', path: string, token?: string, body?: unknown) => {
      const res = await request(`${url}${path}`, {
        method,
        dispatcher: keep,
        headers: {
          authorization: token ? `Bearer ${token}` : undefined,
          'content-type': body === undefined ? undefined : 'application/json',
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.body.text();
      if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
    };
    const measure = async (label: string, n: number, one: (i: number) => Promise<void>): Promise<Row> => {
      const [relay0, pg0] = [cpuMs(child.pid!), treeCpuMs(pgs.pid)];
      const secs = await drive(n, CONCURRENCY, one);
      const [relay, pgCpu] = [cpuMs(child.pid!) - relay0, treeCpuMs(pgs.pid) - pg0];
      return { label, n, perSec: n / secs, relayMsPerOp: relay / n, pgMsPerOp: pgCpu / n };
    };
    try {
      await drive(500, CONCURRENCY, () => call('GET', '/healthz')); // warm-up (JIT, connections)
      const base = await measure('`GET /healthz` (baseline)', 5_000, () => call('GET', '/healthz'));
      const reg = await measure('`POST /register` (PSK)', registrations, (i) =>
        call('POST', '/api/v1/register', psks[i]!, {
          cluster: `new-${i}`,
          publicKey: randomKey(),
          agentVersion: '0.1.0',
        }),
      );
      const renew = await measure(`\`POST /agent/lease\`, ${agents} agents, kept-alive`, agents, (i) =>
        call('POST', '/api/v1/agent/lease', creds[i]!, {}),
      );
      report(base, [base, reg, renew], renew);
    } finally {
      await keep.close();
      await stopChild(child);
    }
  } finally {
    pgs.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(base: Row, rows: Row[], renew: Row): void {
  console.log('\n| operation | ops | ops/s | relay CPU ms/op | PostgreSQL CPU ms/op | ops/s vs baseline |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.n} | ${Math.round(r.perSec)} | ${r.relayMsPerOp.toFixed(3)} | ${r.pgMsPerOp.toFixed(3)} | ${ratio(r.perSec, base.perSec)} |`,
    );
  }
  const share = (msPerOp: number) => (((msPerOp * 10_000) / 60 / 1000) * 100).toFixed(2);
  console.log(
    `10,000 agents renewing every 60 s: relay ${share(renew.relayMsPerOp)} % of one core (target < 5 %), PostgreSQL ${share(renew.pgMsPerOp)} %`,
  );
}

serveOrMain(([dir, storeUrl]) => serve(dir!, storeUrl!), main);
