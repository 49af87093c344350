/**
 * A real HTTP CONNECT proxy for tests: tinyproxy (Debian package) in the foreground with a config file
 * written here, on a free port, CONNECT limited to the given ports, optional basic auth. Tracked in the
 * cleanup registry; stop() kills it and removes its directory.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerTempPath } from './cleanup.js';
import { type ProcessHandle, spawnProcess } from './process.js';
import { waitFor } from './wait.js';

export interface TinyproxyOptions {
  /** Address tinyproxy listens on (default 127.0.0.1). */
  readonly listen?: string;
  /** The only ports CONNECT may reach (tinyproxy's ConnectPort). */
  readonly connectPorts: readonly number[];
  /** BasicAuth user and password (tinyproxy then answers 407 without them). */
  readonly auth?: { readonly user: string; readonly password: string };
  /** Run inside this network namespace. */
  readonly netns?: string;
  /** Client addresses allowed (tinyproxy's Allow; default: everyone). */
  readonly allow?: readonly string[];
}

export interface Tinyproxy {
  readonly host: string;
  readonly port: number;
  /** http://[user:pass@]host:port */
  url(auth?: { user: string; password: string }): string;
  /** tinyproxy's log (connections, CONNECT targets). */
  log(): string;
  readonly process: ProcessHandle;
  stop(): Promise<void>;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export async function startTinyproxy(opts: TinyproxyOptions): Promise<Tinyproxy> {
  const host = opts.listen ?? '127.0.0.1';
  const dir = mkdtempSync(join(tmpdir(), 'tinyproxy-'));
  const unregisterDir = registerTempPath(dir);
  const port = opts.netns ? 18_000 + Math.floor(Math.random() * 2000) : await freePort(host);
  const logFile = join(dir, 'tinyproxy.log');
  const lines = [
    `Port ${port}`,
    `Listen ${host}`,
    'Timeout 60',
    `LogFile "${logFile}"`,
    'LogLevel Info',
    'MaxClients 50',
    `PidFile "${join(dir, 'tinyproxy.pid')}"`,
    ...(opts.allow ?? []).map((a) => `Allow ${a}`),
    ...opts.connectPorts.map((p) => `ConnectPort ${p}`),
    ...(opts.auth ? [`BasicAuth ${opts.auth.user} ${opts.auth.password}`] : []),
    'DisableViaHeader Yes',
  ];
  const conf = join(dir, 'tinyproxy.conf');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  const proc = spawnProcess('tinyproxy', ['-d', '-c', conf], {
    ...(opts.netns ? { netns: opts.netns } : {}),
    timeoutMs: 170_000,
  });
  const readLog = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  try {
    await waitFor(
      () => /Accepting connections/.test(readLog()) || !proc.isRunning(),
      10_000,
      'tinyproxy start',
    );
    if (!proc.isRunning()) throw new Error(`tinyproxy exited: ${proc.output()} ${readLog()}`);
  } catch (err) {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
    unregisterDir();
    throw err;
  }
  return {
    host,
    port,
    process: proc,
    url: (auth) =>
      `http://${auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.password)}@` : ''}${host}:${port}`,
    log: readLog,
    stop: async () => {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
      unregisterDir();
    },
  };
}
