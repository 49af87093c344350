/**
 * A real TCP load balancer for tests: Debian's haproxy in the foreground, in TCP mode on a free loopback
 * port in front of relay replicas, round robin, each server health-checked with `GET /readyz` over TLS
 * (check-ssl, verify none) every `checkIntervalMs`, two failed checks in a row take it out (one slow check on a
 * loaded machine does not) and one good check brings it back. A connection refused by a server is retried on another (redispatch). The admin socket answers
 * `serverStatus()`. Tracked in the cleanup registry; stop() kills it and removes its directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerTempPath } from './cleanup.js';
import { type ProcessHandle, spawnProcess } from './process.js';
import { freePort } from './tinyproxy.js';
import { waitFor } from './wait.js';

export interface HaproxyServer {
  /** haproxy's name for it (letters, digits, dashes). */
  readonly name: string;
  readonly host: string;
  readonly port: number;
}

export interface HaproxyOptions {
  readonly servers: readonly HaproxyServer[];
  /** Health check interval (default 200 ms). */
  readonly checkIntervalMs?: number;
  /** SIGKILL haproxy after this long (default 170 s). */
  readonly timeoutMs?: number;
  /** Send a PROXY header to the servers (haproxy's `send-proxy` / `send-proxy-v2`; checks send it too). */
  readonly sendProxy?: 'v1' | 'v2';
  /** Local address haproxy connects to the servers from (haproxy's `source`). */
  readonly source?: string;
  /** The frontend's address (default 127.0.0.1; its port is free on loopback). */
  readonly bindHost?: string;
}

export interface Haproxy {
  readonly host: string;
  readonly port: number;
  /** host:port of the frontend. */
  readonly address: string;
  readonly process: ProcessHandle;
  /** Each server's state as haproxy sees it: `UP`, `DOWN`, `MAINT`, ... (its `show stat` status column). */
  serverStatus(): Promise<Record<string, string>>;
  /** Resolves once haproxy sees exactly `up` as the servers that are UP. */
  waitForUp(up: readonly string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function proxyKeyword(sendProxy: HaproxyOptions['sendProxy']): string {
  if (sendProxy === undefined) return '';
  return sendProxy === 'v1' ? ' send-proxy' : ' send-proxy-v2';
}

function config(opts: HaproxyOptions, port: number, socket: string): string {
  const inter = opts.checkIntervalMs ?? 200;
  for (const s of opts.servers) {
    if (!/^[A-Za-z0-9-]+$/.test(s.name)) throw new Error(`bad haproxy server name ${s.name}`);
  }
  return [
    'global',
    `  stats socket ${socket} mode 600 level admin`,
    '  maxconn 4096',
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout check 2s',
    '  retries 3',
    '  option redispatch 1',
    'frontend relays',
    `  bind ${opts.bindHost ?? '127.0.0.1'}:${port}`,
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    '  option httpchk',
    '  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host relay',
    '  http-check expect status 200',
    ...(opts.source !== undefined ? [`  source ${opts.source}`] : []),
    `  default-server check check-ssl verify none inter ${inter} fastinter ${inter} downinter ${inter} fall 2 rise 1${proxyKeyword(opts.sendProxy)}`,
    ...opts.servers.map((s) => `  server ${s.name} ${s.host}:${s.port}`),
    '',
  ].join('\n');
}

/** One command on the admin socket; resolves with haproxy's whole answer. */
function adminCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = createConnection(socket);
    let out = '';
    c.setTimeout(5_000, () => c.destroy(new Error(`haproxy admin socket: no answer to ${command}`)));
    c.on('connect', () => c.end(`${command}\n`));
    c.on('data', (d: Buffer) => {
      out += d.toString();
    });
    c.on('end', () => resolve(out));
    c.on('error', reject);
  });
}

export async function startHaproxy(opts: HaproxyOptions): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-'));
  const unregisterDir = registerTempPath(dir);
  const port = await freePort();
  const socket = join(dir, 'admin.sock');
  const conf = join(dir, 'haproxy.cfg');
  writeFileSync(conf, config(opts, port, socket));
  const proc = spawnProcess('haproxy', ['-db', '-f', conf], { timeoutMs: opts.timeoutMs ?? 170_000 });
  const stop = async (): Promise<void> => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
    unregisterDir();
  };
  const serverStatus = async (): Promise<Record<string, string>> => {
    const csv = await adminCommand(socket, 'show stat');
    const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
    const cols = (header ?? '').split(',');
    const [px, sv, status] = ['pxname', 'svname', 'status'].map((c) => cols.indexOf(c));
    const out: Record<string, string> = {};
    for (const row of rows) {
      const f = row.split(',');
      if (f[px!] === 'replicas' && f[sv!] !== 'BACKEND') out[f[sv!]!] = f[status!] ?? '';
    }
    return out;
  };
  try {
    await waitFor(
      async () =>
        !proc.isRunning() ||
        (await serverStatus().then(
          () => true,
          () => false,
        )),
      10_000,
      'haproxy start',
      50,
    );
    if (!proc.isRunning()) throw new Error(`haproxy exited: ${proc.output()}`);
  } catch (err) {
    await stop();
    throw err;
  }
  const host = opts.bindHost ?? '127.0.0.1';
  return {
    host,
    port,
    address: `${host}:${port}`,
    process: proc,
    serverStatus,
    async waitForUp(up, timeoutMs = 10_000) {
      const want = [...up].sort().join(',');
      let seen = '';
      try {
        await waitFor(
          async () => {
            const st = await serverStatus();
            seen = JSON.stringify(st);
            const isUp = Object.keys(st).filter((k) => st[k]!.startsWith('UP'));
            return isUp.sort().join(',') === want;
          },
          timeoutMs,
          `haproxy servers up: ${want}`,
          50,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message} (last seen ${seen})`);
      }
    },
    stop,
  };
}
