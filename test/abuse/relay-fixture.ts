/**
 * What the key and log abuse replays share: the real `tunnel-relay serve` binary (cli-harness), JSON
 * calls to its API as an outsider would make them, the hub key as anyone reads it off `/derp`, rows
 * written straight into the relay's SQLite file (better-sqlite3, as a hand edit or an older build
 * would leave them), and a real `tunnel-client` agent in front of a real HTTP upstream, reached with
 * curl through the relay's CONNECT proxy.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Agent, request } from 'undici';
import { WebSocket } from 'ws';
import { newSecret } from '../../relay/ops/secrets.js';
import { decodeServerKey, FrameType } from '../../shared/net/derp/frames.js';
import {
  CLIENT_BIN,
  type Curl,
  cleanEnv,
  curl,
  Proc,
  type ReadyLine,
  run,
  startServe,
  tempDir,
  waitConnected,
} from '../cli-harness.js';
import { listen, sampleHandler } from '../proxy-fixtures.js';

export interface ServedRelay {
  proc: Proc;
  ready: ReadyLine;
  dataDir: string;
  /** Env for the admin CLI (URL, admin key, CA pin). */
  adminEnv: NodeJS.ProcessEnv;
  adminKey: string;
}

/** Starts `tunnel-relay serve` on a data dir; `adminKey` is needed again on a restart (printed once). */
export async function serve(
  dataDir: string,
  adminKey?: string,
  extra: readonly string[] = [],
): Promise<ServedRelay> {
  const { proc, ready } = await startServe(dataDir, '127.0.0.1:0', extra);
  const key = adminKey ?? ready.adminKey;
  if (!key) throw new Error('no admin key: pass the one from the first start');
  const adminEnv = cleanEnv({
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: key,
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  });
  return { proc, ready, dataDir, adminEnv, adminKey: key };
}

/** The lines of the relay's JSON log (stderr) that parse. */
export function logLines(p: Proc): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of p.stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line cut by the read: not a whole record
    }
  }
  return out;
}

const insecure = new Agent({ connect: { rejectUnauthorized: false } });

/** An HTTPS call to the relay as an outsider makes it (no CA pin); body parsed when JSON. */
export async function api(
  url: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  opts: { token?: string; body?: unknown } = {},
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
): Promise<{ status: number; body: any; text: string }> {
  const res = await request(`${url}${path}`, {
    method,
    dispatcher: insecure,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  const json = String(res.headers['content-type'] ?? '').startsWith('application/json');
  return { status: res.statusCode, body: json ? JSON.parse(text) : text, text };
}

/** The relay's hub key, as anyone reads it: the ServerKey frame `/derp` sends first. */
export function serverKeyOf(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/derp`, 'derp', { rejectUnauthorized: false });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('no ServerKey frame within 5 s'));
    }, 5_000);
    ws.once('message', (data: Buffer) => {
      clearTimeout(timer);
      ws.terminate();
      if (data[0] !== FrameType.ServerKey) return reject(new Error(`first frame has type ${data[0]}`));
      resolve(Buffer.from(decodeServerKey(data.subarray(5)).serverKey));
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** A new cluster's bootstrap PSK (`POST /api/v1/clusters`, as `cluster create NAME` calls it). */
export async function createCluster(relay: ServedRelay, name: string): Promise<string> {
  const r = await api(relay.ready.url, 'POST', '/api/v1/clusters', { token: relay.adminKey, body: { name } });
  if (r.status !== 201) throw new Error(`cluster create ${name}: ${r.status} ${r.text}`);
  return r.body.bootstrap.psk;
}

export interface StoredCluster {
  name: string;
  publicKey: string | null;
  status?: 'Pending' | 'Accepted' | 'Denied';
  /** Host number of the tunnel address (100.64.0.0 + n). */
  addrIndex?: number | null;
  presharedKey?: string | null;
  /** The claims column as stored (JSON text). */
  claims?: string;
}

/** Host numbers for stored rows: far above what the relay itself hands out in a test. */
let nextAddrIndex = 100_000;

/**
 * Writes a cluster row straight into the relay's SQLite file (safe while it runs: WAL, and the relay
 * reads rows per request). Returns an agent credential for it (`tac_...`), stored as its hash.
 */
export function storeCluster(dataDir: string, c: StoredCluster): string {
  const db = new Database(join(dataDir, 'relay.db'));
  db.pragma('busy_timeout = 5000');
  const now = Date.now();
  const credential = newSecret('agent');
  try {
    db.transaction(() => {
      db.prepare(
        `INSERT INTO clusters (name, grp, display_name, status, created_at, status_changed_at, public_key,
           addr_index, preshared_key, agent_version, claims, registered_at)
         VALUES (?, 'default', ?, ?, ?, ?, ?, ?, ?, '0.1.0', ?, ?)`,
      ).run(
        c.name,
        c.name,
        c.status ?? 'Accepted',
        now,
        now,
        c.publicKey,
        c.addrIndex === undefined ? nextAddrIndex++ : c.addrIndex,
        c.presharedKey === undefined ? Buffer.alloc(32, 7).toString('base64') : c.presharedKey,
        c.claims ?? '{}',
        now,
      );
      db.prepare('INSERT INTO agent_credentials (id, cluster, hash, created_at) VALUES (?, ?, ?, ?)').run(
        `a_${c.name}`,
        c.name,
        createHash('sha256').update(credential).digest('hex'),
        now,
      );
    })();
  } finally {
    db.close();
  }
  return credential;
}

/** A plain HTTP upstream (sampleHandler: /hello answers `hello from NAME`). */
export async function upstream(name: string): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(sampleHandler(name));
  return { server, port: await listen(server) };
}

/** Joins cluster `name` with a real agent in front of `upstreamPort`, runs it, waits until connected. */
export async function runAgent(relay: ServedRelay, name: string, upstreamPort: number): Promise<Proc> {
  const psk = await createCluster(relay, name);
  const stateDir = join(tempDir('abuse-agent-'), 'state');
  const env = cleanEnv();
  const joined = await run(
    CLIENT_BIN,
    [
      'join',
      '--relay',
      relay.ready.url,
      '--cluster',
      name,
      '--psk',
      psk,
      '--ca-pin',
      relay.ready.caPin,
      '--state-dir',
      stateDir,
      '--upstream',
      `http://127.0.0.1:${upstreamPort}`,
      '--wait',
    ],
    env,
    40_000,
  );
  if (joined.code !== 0) throw new Error(`join ${name}: ${joined.stderr}`);
  const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env);
  await waitConnected(relay.adminEnv, name);
  return agent;
}

/** GET http://NAME.clusters.local:PORT/hello through the relay's CONNECT proxy (admin key). */
export function viaConnect(relay: ServedRelay, cluster: string, port: number): Promise<Curl> {
  return curl(
    [
      '-sS',
      '-p',
      '--proxy-insecure',
      '-x',
      relay.ready.url,
      '--proxy-header',
      `Proxy-Authorization: Bearer ${relay.adminKey}`,
      '-w',
      '\n%{http_code}',
      `http://${cluster}.clusters.local:${port}/hello`,
    ],
    15_000,
  );
}
