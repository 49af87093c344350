/**
 * Control-plane benchmark: one relay (SQLite, self-signed TLS, info-level request logs to /dev/null)
 * in a child process, driven over HTTPS from this process with 16 concurrent requests.
 * - baseline: GET /healthz requests/s and relay CPU per request (same connections, same run);
 * - registrations/s (PSK check + address allocation + credential, one transaction each);
 * - lease renewals/s with 10,000 registered agents, on kept-alive connections and with a fresh TLS
 *   connection per renewal; relay CPU per renewal and what 10,000 agents every 60 s cost as % of
 *   one core (target < 5 %).
 * Relay CPU is read from /proc/<pid>/stat (user + system, process-cpu.ts), so the client's own work is not counted.
 * Run: npm run build:tools && node dist/bench/control-plane-bench.js [agents=10000] [registrations=2000]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, buildConnector, request } from 'undici';
import { SqliteStore } from '../relay/control/store/sqlite.js';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { hashSecret, newId, newSecret } from '../relay/ops/secrets.js';
import { keyToBase64 } from '../shared/keys.js';
import { serveOrMain, serveRelayChild, stopChild } from './bench-child.js';
import { describeMachine, ratio } from './machine.js';
import { cpuMs, drive as driveOn } from './process-cpu.js';
import { registerSeeded } from './seed-agents.js';

const CONCURRENCY = 16;
const drive = (n: number, one: (i: number) => Promise<void>) => driveOn(n, CONCURRENCY, one);
/**
 * A random 32-byte public key, below 2^254 so it is a canonical Curve25519 encoding (the relay refuses others);
 * the control plane stores keys and does no curve math on them.
 */
const randomKey = (): string => {
  const b = randomBytes(32);
  b[31]! &= 0x3f;
  return keyToBase64(b);
};

function serve(dir: string): Promise<void> {
  return serveRelayChild(
    resolveRelayConfig({
      flags: { listen: '127.0.0.1:0', dataDir: dir, udpPort: 'off', stunPort: 'off', logLevel: 'info' },
    }),
  );
}

async function main(): Promise<void> {
  const agents = Number(process.argv[2] ?? 10_000);
  const registrations = Number(process.argv[3] ?? 2_000);
  const dir = mkdtempSync(join(tmpdir(), 'cp-bench-'));
  console.log(`machine: ${describeMachine()}`);

  // Seed the store directly: `agents` registered agents with known credentials, and
  // `registrations` clusters with fresh PSKs for the registration run.
  const seedStart = performance.now();
  const store = new SqliteStore(join(dir, 'relay.db'));
  const now = Date.now();
  const audit = { at: now, actor: 'bench', action: 'seed', target: '', source: 'local', detail: {} };
  const creds: string[] = [];
  for (let i = 0; i < agents; i++) {
    const name = `agent-${i}`;
    const psk = newSecret('psk');
    await store.createCluster(
      { name, group: 'default', displayName: name, createdAt: now },
      { id: newId('p_'), hash: hashSecret(psk), expiresAt: now + 86_400_000 },
      audit,
    );
    const seed = { cluster: name, psk, publicKey: randomKey(), presharedKey: randomKey(), now, audit };
    creds.push(await registerSeeded(store, seed));
  }
  const psks: string[] = [];
  for (let i = 0; i < registrations; i++) {
    const psk = newSecret('psk');
    await store.createCluster(
      { name: `new-${i}`, group: 'default', displayName: `new-${i}`, createdAt: now },
      { id: newId('p_'), hash: hashSecret(psk), expiresAt: now + 86_400_000 },
      audit,
    );
    psks.push(psk);
  }
  await store.close();
  console.log(
    `seeded ${agents} agents + ${registrations} PSKs in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`,
  );

  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
  });
  const { url, caPem } = JSON.parse(line) as { url: string; caPem: string };
  const pid = child.pid!;
  const keep = new Agent({ connect: { ca: caPem }, connections: CONCURRENCY });

  const call = async (
    dispatcher: Agent,
    method: 'GET' | 'POST',
    path: string,
    token?: string,
    body?: unknown,
  ) => {
    const res = await request(`${url}${path}`, {
      method,
      dispatcher,
      headers: {
        authorization: token ? `Bearer ${token}` : undefined,
        'content-type': body === undefined ? undefined : 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${path}: ${res.statusCode}`);
  };

  const measure = async (label: string, n: number, one: (i: number) => Promise<void>) => {
    const cpu0 = cpuMs(pid);
    const secs = await drive(n, one);
    const cpu = cpuMs(pid) - cpu0;
    return { label, n, perSec: n / secs, cpuMsPerOp: cpu / n };
  };

  try {
    // warm-up (JIT, connections)
    await drive(500, () => call(keep, 'GET', '/healthz'));
    const base = await measure('GET /healthz (baseline)', 5_000, () => call(keep, 'GET', '/healthz'));
    const reg = await measure('POST /register (PSK)', registrations, (i) =>
      call(keep, 'POST', '/api/v1/register', psks[i]!, {
        cluster: `new-${i}`,
        publicKey: randomKey(),
        agentVersion: '0.1.0',
      }),
    );
    const renew = await measure(`POST /agent/lease, ${agents} agents, kept-alive`, agents, (i) =>
      call(keep, 'POST', '/api/v1/agent/lease', creds[i]!, {}),
    );
    const freshN = Math.min(agents, 2_000);
    const renewFresh = await measure('POST /agent/lease, new TLS connection each', freshN, async (i) => {
      const a = new Agent({ connect: { ca: caPem }, connections: 1 });
      try {
        await call(a, 'POST', '/api/v1/agent/lease', creds[i]!, {});
      } finally {
        await a.close();
      }
    });

    // New TCP + TLS connection per renewal, but resuming the TLS session (what an agent whose
    // connection was dropped between renewals does if it keeps its HTTP client).
    const resumingConnector = buildConnector({ ca: caPem, maxCachedSessions: 100 });
    const renewResumed = await measure(
      'POST /agent/lease, new connection, TLS resumed',
      freshN,
      async (i) => {
        const a = new Agent({ connect: resumingConnector, connections: 1 });
        try {
          await call(a, 'POST', '/api/v1/agent/lease', creds[i]!, {});
        } finally {
          await a.close();
        }
      },
    );

    const rows = [base, reg, renew, renewFresh, renewResumed];
    console.log(`\n| operation | ops | ops/s | relay CPU ms/op | ops/s vs baseline |`);
    console.log('|---|---|---|---|---|');
    for (const r of rows) {
      console.log(
        `| ${r.label} | ${r.n} | ${Math.round(r.perSec)} | ${r.cpuMsPerOp.toFixed(3)} | ${ratio(r.perSec, base.perSec)} |`,
      );
    }
    for (const r of [renew, renewFresh, renewResumed]) {
      const coreShare = ((r.cpuMsPerOp * 10_000) / 60 / 1000) * 100;
      console.log(
        `10,000 agents renewing every 60 s (${r.label.split(', ').slice(-1)[0]}): ${coreShare.toFixed(2)} % of one core (target < 5 %)`,
      );
    }
  } finally {
    await keep.close();
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

serveOrMain(([dir]) => serve(dir!), main);
