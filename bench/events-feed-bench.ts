/**
 * Events-feed benchmark: one relay (SQLite, self-signed TLS, logs to /dev/null) in a child process holding
 * `clusters` registered clusters (2,000), and `streams` (20) GET /api/v1/events consumers in this process,
 * while the clusters change (lease renewals, each one event per stream) at `rate` changes/s (400: every
 * cluster renewing every 5 s, 12x what 60 s leases give):
 *   - the time for the streams to open and deliver their snapshots, and the snapshot's size;
 *   - relay CPU (% of one core, from /proc/<pid>/stat) and RSS with the same changes and no stream, then with
 *     the streams open: the feed's cost is the difference;
 *   - events delivered per stream and the time from a renewal's request to its event at the consumers.
 * Run: npm run build:tools && node dist/bench/events-feed-bench.js [clusters=2000] [streams=20] [rate=400] [seconds=10]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { SqliteStore } from '../relay/control/store/sqlite.js';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { hashSecret, newId, newSecret } from '../relay/ops/secrets.js';
import { keyToBase64 } from '../shared/keys.js';
import { SseParser } from '../shared/kit/http/sse-parser.js';
import { serveOrMain, serveRelayChild, stopChild } from './bench-child.js';
import { describeMachine } from './machine.js';
import { registerSeeded } from './seed-agents.js';

const randomKey = (): string => keyToBase64(randomBytes(32));

function serve(dir: string): Promise<void> {
  return serveRelayChild(
    resolveRelayConfig({
      flags: { listen: '127.0.0.1:0', dataDir: dir, udpPort: 'off', stunPort: 'off', logLevel: 'warn' },
    }),
  );
}

/** Relay process CPU time in ms (utime + stime) and resident memory in MiB, from /proc. */
function usage(pid: number): { cpuMs: number; rssMiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuMs, rssMiB: Number(rss?.[1] ?? 0) / 1024 };
}

/** Seeds `n` registered clusters straight into the store; returns their agent credentials. */
async function seed(dir: string, n: number): Promise<string[]> {
  const store = new SqliteStore(join(dir, 'relay.db'));
  const now = Date.now();
  const audit = { at: now, actor: 'bench', action: 'seed', target: '', source: 'local', detail: {} };
  const creds: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `c-${i}`;
    const psk = newSecret('psk');
    await store.createCluster(
      { name, group: i % 2 === 0 ? 'even' : 'odd', displayName: `Cluster ${i}`, createdAt: now },
      { id: newId('p_'), hash: hashSecret(psk), expiresAt: now + 86_400_000 },
      audit,
    );
    const claims = { region: 'eu-west-1', env: 'bench' };
    const seed = {
      cluster: name,
      psk,
      publicKey: randomKey(),
      presharedKey: randomKey(),
      claims,
      now,
      audit,
    };
    creds.push(await registerSeeded(store, seed));
  }
  await store.close();
  return creds;
}

interface Consumer {
  events: number;
  bytes: number;
  readyAt: number | null;
  /** ms from the renewal request to its event, per event matched. */
  latencies: number[];
  close(): void;
}

function consume(url: string, key: string, dispatcher: Agent, sentAt: Map<string, number>): Consumer {
  const controller = new AbortController();
  const c: Consumer = { events: 0, bytes: 0, readyAt: null, latencies: [], close: () => controller.abort() };
  const parser = new SseParser();
  void request(`${url}/api/v1/events`, {
    headers: { authorization: `Bearer ${key}` },
    dispatcher,
    signal: controller.signal,
    bodyTimeout: 0,
  })
    .then((res) => {
      res.body.on('data', (chunk: Buffer) => {
        c.bytes += chunk.length;
        for (const e of parser.push(chunk.toString('utf8'))) {
          c.events++;
          if (e.event === 'ready') c.readyAt = performance.now();
          if (c.readyAt === null || e.event !== 'cluster') continue;
          const name = /"name":"([^"]+)"/.exec(e.data)?.[1];
          const at = name === undefined ? undefined : sentAt.get(name);
          if (at !== undefined) c.latencies.push(performance.now() - at);
        }
      });
      res.body.on('error', () => {});
    })
    .catch(() => {});
  return c;
}

/** Renews leases round-robin at `rate` per second for `seconds`; records when each was sent. */
async function churn(
  opts: { url: string; creds: string[]; rate: number; seconds: number; dispatcher: Agent },
  sentAt: Map<string, number>,
): Promise<number> {
  const total = opts.rate * opts.seconds;
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < total; i = next++) {
        const due = start + (i * 1000) / opts.rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const k = i % opts.creds.length;
        sentAt.set(`c-${k}`, performance.now());
        const res = await request(`${opts.url}/api/v1/agent/lease`, {
          method: 'POST',
          dispatcher: opts.dispatcher,
          headers: { authorization: `Bearer ${opts.creds[k]}`, 'content-type': 'application/json' },
          body: '{}',
        });
        await res.body.text();
      }
    }),
  );
  return total / ((performance.now() - start) / 1000);
}

const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function main(): Promise<void> {
  const clusters = Number(process.argv[2] ?? 2_000);
  const streams = Number(process.argv[3] ?? 20);
  const rate = Number(process.argv[4] ?? 400);
  const seconds = Number(process.argv[5] ?? 10);
  const dir = mkdtempSync(join(tmpdir(), 'events-bench-'));
  console.log(`machine: ${describeMachine()}`);
  const creds = await seed(dir, clusters);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
  });
  const { url, caPem, adminKey } = JSON.parse(line) as { url: string; caPem: string; adminKey: string };
  const pid = child.pid!;
  const api = new Agent({ connect: { ca: caPem }, connections: 16 });
  const feeds = new Agent({ connect: { ca: caPem }, connections: streams });
  const rows: string[] = [];
  const row = (phase: string, cells: Array<string | number>) =>
    rows.push(`| ${phase} | ${cells.join(' | ')} |`);
  try {
    const sentAt = new Map<string, number>();
    await churn({ url, creds, rate, seconds: 2, dispatcher: api }, sentAt); // warm-up
    let u0 = usage(pid);
    const quietRate = await churn({ url, creds, rate, seconds, dispatcher: api }, new Map());
    let u1 = usage(pid);
    const quietCpu = (u1.cpuMs - u0.cpuMs) / (seconds * 10);
    row('changes, no stream', [
      0,
      Math.round(quietRate),
      quietCpu.toFixed(1),
      u1.rssMiB.toFixed(0),
      '-',
      '-',
      '-',
    ]);

    const keys: string[] = [];
    for (let i = 0; i < streams; i++) {
      const res = await request(`${url}/api/v1/tokens`, {
        method: 'POST',
        dispatcher: api,
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'viewer' }),
      });
      keys.push(((await res.body.json()) as { token: string }).token);
    }
    u0 = usage(pid);
    const openStart = performance.now();
    const consumers = keys.map((k) => consume(url, k, feeds, sentAt));
    while (consumers.some((c) => c.readyAt === null)) await new Promise((r) => setTimeout(r, 10));
    const openMs = Math.max(...consumers.map((c) => (c.readyAt ?? 0) - openStart));
    u1 = usage(pid);
    const snapshotKiB = consumers[0]!.bytes / 1024;
    console.log(
      `${streams} streams opened, ${clusters}-cluster snapshots (${snapshotKiB.toFixed(0)} KiB each) delivered in ${openMs.toFixed(0)} ms; relay CPU ${(u1.cpuMs - u0.cpuMs).toFixed(0)} ms`,
    );
    row('open + snapshots', [
      streams,
      '-',
      '-',
      u1.rssMiB.toFixed(0),
      '-',
      `${openMs.toFixed(0)} (all ready)`,
      '-',
    ]);

    for (const c of consumers) {
      c.events = 0;
      c.latencies = [];
    }
    sentAt.clear();
    u0 = usage(pid);
    const busyRate = await churn({ url, creds, rate, seconds, dispatcher: api }, sentAt);
    await new Promise((r) => setTimeout(r, 500));
    u1 = usage(pid);
    const busyCpu = (u1.cpuMs - u0.cpuMs) / (seconds * 10);
    const perStream = consumers.reduce((s, c) => s + c.events, 0) / streams / seconds;
    const lat = consumers.flatMap((c) => c.latencies);
    row('changes, streams open', [
      streams,
      Math.round(busyRate),
      busyCpu.toFixed(1),
      u1.rssMiB.toFixed(0),
      Math.round(perStream),
      pct(lat, 50).toFixed(1),
      pct(lat, 99).toFixed(1),
    ]);
    for (const c of consumers) c.close();

    console.log(
      '\n| phase | streams | changes/s | relay CPU % of one core | relay RSS MiB | events/s per stream | p50 ms | p99 ms |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(
      `feed cost: ${(busyCpu - quietCpu).toFixed(1)} % of one core for ${streams} streams at ${Math.round(busyRate)} changes/s`,
    );
  } finally {
    await api.close();
    await feeds.destroy();
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

serveOrMain(([dir]) => serve(dir!), main);
