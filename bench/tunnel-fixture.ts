/**
 * Shared set-up for the benchmarks that run the real binaries (proxy-bench, tunnel-bench,
 * proxy-egress-bench): process tracking, a byte-source upstream, CONNECT and direct dialers, and the
 * download / latency / CPU measurements they all report.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { dirname, join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { loopbackServeArgs } from './serve-args.js';

const here = dirname(fileURLToPath(import.meta.url));
export const RELAY_BIN = join(here, '../relay/cli/main.js');
export const CLIENT_BIN = join(here, '../tunnel-client/cli/main.js');

/** Every process a benchmark started; each benchmark kills the survivors at the end. */
export const children: ChildProcess[] = [];

/**
 * A byte source: `GET /<bytes>` is answered with that many bytes, then the connection closes. `GET /echo`
 * is answered with a header, then every byte that follows is echoed back (for round trips on one connection).
 */
export const UPSTREAM_SRC = `
const net = require('node:net');
const blk = Buffer.alloc(65536, 97);
net.createServer((c) => {
  let head = '';
  c.on('data', (d) => {
    if (head === null) return;
    head += d.toString('latin1');
    const end = head.indexOf('\\r\\n\\r\\n');
    if (end < 0) return;
    if (head.startsWith('GET /echo ')) {
      head = null;
      c.write('HTTP/1.1 200 OK\\r\\n\\r\\n');
      c.on('data', (e) => c.write(e));
      return;
    }
    let left = Number(/^GET \\/(\\d+)/.exec(head)?.[1] ?? '0');
    head = null;
    c.write('HTTP/1.1 200 OK\\r\\ncontent-length: ' + left + '\\r\\nconnection: close\\r\\n\\r\\n');
    const pump = () => {
      while (left > 0) {
        const part = left >= blk.length ? blk : blk.subarray(0, left);
        left -= part.length;
        if (!c.write(part)) return void c.once('drain', pump);
      }
      c.end();
    };
    pump();
  });
  c.on('error', () => {});
}).listen(0, '127.0.0.1', function () { process.stdout.write(this.address().port + '\\n'); });
`;

/**
 * Opt-in: BENCH_NODE_ARGS (space-separated) is put in front of the arguments of every Node child (relay,
 * agent, byte source, admin commands), e.g. `--import /tmp/gc-log.mjs` to log its garbage collections.
 */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

export function start(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  // The binaries run with the flags their `#!` line gives them (shared/kit/node-flags.ts), as users run them.
  const bin = args[0] === RELAY_BIN || args[0] === CLIENT_BIN ? NODE_FLAGS : [];
  const argv = cmd === process.execPath ? [...NODE_ARGS, ...bin, ...args] : args;
  const c = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  c.stderr?.resume();
  children.push(c);
  return c;
}

export function firstLine(c: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    c.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    c.once('exit', () => reject(new Error('process exited early')));
  });
}

/** Runs a `tunnel-relay` admin command with `--output json` and parses what it prints. */
export async function runJson(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const c = start(process.execPath, [RELAY_BIN, ...args, '--output', 'json'], env);
  let out = '';
  c.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await once(c, 'exit');
  return JSON.parse(out) as Record<string, unknown>;
}

/** Opens a byte pipe: direct TCP, or CONNECT through the relay (TLS to the relay). */
export type Dial = () => Promise<net.Socket>;

/** How a CONNECT dial talks to the relay. */
export interface ConnectOptions {
  /** Offer the TLS session ticket of the last connection (a resumed handshake), as a client with a session cache. */
  resume?: boolean;
}

/** How a client trusts the relay: its pinned certificate, or (no `ca`) nothing checked. */
type Trust = { secureContext: tls.SecureContext; servername: string } | { rejectUnauthorized: false };

/**
 * The trust of every connection of one dial, built once: a client passing `ca` to each tls.connect builds a
 * new OpenSSL context per connection (~1 ms of its CPU here), which kubectl and Go clients, holding one
 * tls.Config, do not.
 */
function trustOf(ca: string | undefined): Trust {
  return ca
    ? { secureContext: tls.createSecureContext({ ca }), servername: 'localhost' }
    : { rejectUnauthorized: false };
}

/** The relay's TLS connection; with a `tickets` holder, offering and keeping its session ticket. */
function relayTls(u: URL, trust: Trust, tickets: { last?: Buffer } | undefined): tls.TLSSocket {
  const s = tls.connect({ host: u.hostname, port: Number(u.port), ...trust, session: tickets?.last });
  if (tickets)
    s.on('session', (t: Buffer) => {
      tickets.last = t;
    });
  return s;
}

/**
 * Resolves with the socket once the relay's answer to the CONNECT is 200, paused with the bytes after the answer
 * put back: whoever reads it next resumes it.
 */
function awaitConnectAnswer(
  s: net.Socket,
  resolve: (s: net.Socket) => void,
  reject: (e: Error) => void,
): void {
  let buf = '';
  const onData = (c: Buffer): void => {
    buf += c.toString('latin1');
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    s.pause();
    s.off('data', onData);
    const rest = Buffer.from(buf.slice(end + 4), 'latin1');
    if (rest.length > 0) s.unshift(rest);
    if (buf.startsWith('HTTP/1.1 200')) resolve(s);
    else reject(new Error(buf.split('\r\n')[0]));
  };
  s.on('data', onData);
  s.once('error', reject);
}

/** CONNECT through the relay; `ca` pins its certificate (without it the certificate is not checked). */
export function connectVia(
  relayUrl: string,
  ca: string | undefined,
  key: string,
  target: string,
  o: ConnectOptions = {},
): Dial {
  const u = new URL(relayUrl);
  const tickets = o.resume ? {} : undefined;
  const trust = trustOf(ca);
  return () =>
    new Promise((resolve, reject) => {
      const s = relayTls(u, trust, tickets);
      awaitConnectAnswer(s, resolve, reject);
      s.once('secureConnect', () =>
        s.write(
          `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`,
        ),
      );
    });
}

/**
 * A download of `bytes` on a new CONNECT whose GET follows the CONNECT head in the same write (the relay sends
 * it with the stream open), over a resumed TLS session when one is kept (an `http:` URL: over plain TCP);
 * resolves with the bytes of the answer.
 */
export function pipelinedDownload(
  relayUrl: string,
  ca: string | undefined,
  key: string,
  target: string,
): (bytes: number) => Promise<number> {
  const u = new URL(relayUrl);
  const tickets = {};
  const trust = trustOf(ca);
  const plain = u.protocol === 'http:';
  return async (bytes) => {
    const s = await new Promise<net.Socket>((resolve, reject) => {
      const t = plain ? net.connect(Number(u.port), u.hostname) : relayTls(u, trust, tickets);
      awaitConnectAnswer(t, resolve, reject);
      t.once(plain ? 'connect' : 'secureConnect', () =>
        t.write(
          `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n` +
            `GET /${bytes} HTTP/1.1\r\nHost: x\r\n\r\n`,
        ),
      );
    });
    return drain(s);
  };
}

/**
 * A GET of `bytes` through the relay's path proxy (`/api/v1/clusters/<cluster>/proxy/<bytes>`) on a new TLS
 * connection per request, resuming the TLS session of the last one (the agent's session cache).
 */
export function pathProxyGet(
  relayUrl: string,
  ca: string | undefined,
  key: string,
  cluster: string,
): (bytes: number) => Promise<number> {
  const agent = new https.Agent({ keepAlive: false, maxCachedSessions: 1 });
  const trust = trustOf(ca);
  return (bytes) =>
    new Promise((resolve, reject) => {
      const url = `${relayUrl}/api/v1/clusters/${cluster}/proxy/${bytes}`;
      https
        .get(url, { ...trust, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
          let got = 0;
          res.on('data', (d: Buffer) => {
            got += d.length;
          });
          res.on('end', () =>
            res.statusCode === 200 ? resolve(got) : reject(new Error(`status ${res.statusCode}`)),
          );
        })
        .on('error', reject);
    });
}

export function direct(port: number): Dial {
  return () =>
    new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
}

/** Downloads `bytes` over a dialed pipe; resolves with the bytes received. */
export async function download(dial: Dial, bytes: number): Promise<number> {
  const s = await dial();
  s.write(`GET /${bytes} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return drain(s);
}

/** Reads `s` to its end; resolves with the bytes it carried. */
async function drain(s: net.Socket): Promise<number> {
  let got = 0;
  s.on('data', (d: Buffer) => {
    got += d.length;
  });
  s.resume();
  await once(s, 'end');
  s.destroy();
  return got;
}

/**
 * Opens one connection, switches the byte source to echo, and returns a function that sends `size` bytes
 * and resolves when they are all back (one round trip through whatever the dial goes through).
 */
export async function echoPipe(dial: Dial, size = 100): Promise<{ rtt(): Promise<void>; close(): void }> {
  const s = await dial();
  s.setNoDelay(true);
  let want = -1;
  let wake: (() => void) | null = null;
  let head = '';
  s.on('data', (d: Buffer) => {
    if (want < 0) {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        want = 0;
        wake?.();
      }
      return;
    }
    want -= d.length;
    if (want <= 0) wake?.();
  });
  s.on('error', () => {});
  s.resume();
  const arrived = (): Promise<void> => new Promise((r) => (wake = r));
  const ready = arrived();
  s.write('GET /echo HTTP/1.1\r\nHost: x\r\n\r\n');
  await ready;
  const msg = Buffer.alloc(size, 98);
  return {
    rtt: () => {
      want = size;
      const p = arrived();
      s.write(msg);
      return p;
    },
    close: () => s.destroy(),
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (0 where unavailable). */
export function procCpu(pid: number | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

export interface Quantiles {
  p50: number;
  p90: number;
  p99: number;
}

function quantiles(samples: number[]): Quantiles {
  const t = [...samples].sort((a, b) => a - b);
  const q = (p: number): number => t[Math.floor(t.length * p)] ?? 0;
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99) };
}

/** p50, p90 and p99 (ms) of `n` sequential calls, after 5 warm-up calls. */
export async function latency(fn: () => Promise<unknown>, n: number): Promise<Quantiles> {
  return (await latencyInTurns([fn], n))[0] ?? quantiles([]);
}

/**
 * `n` timed calls of each of `fns`, taken in turns after 5 untimed ones each, so that every one meets the same
 * moments of machine noise: their quantiles compare even where the noise, not the path, sets the tail. The order
 * is reversed every other round (a, b, b, a, a, b, ...): a call often starts while the processes are still
 * finishing the one before (its acknowledgements, timers), and with two calls in a fixed order each would always
 * follow the other and carry only that one's leftovers. `pauseMs` > 0 waits that long (a timer) between calls,
 * so that each starts with the processes idle.
 */
export async function latencyInTurns(
  fns: readonly (() => Promise<unknown>)[],
  n: number,
  pauseMs = 0,
): Promise<Quantiles[]> {
  for (let i = 0; i < 5; i++) for (const fn of fns) await fn();
  const samples = fns.map((): number[] => []);
  const forward = [...fns.keys()];
  const backward = [...forward].reverse();
  for (let i = 0; i < n; i++) {
    for (const k of i % 2 === 0 ? forward : backward) {
      const s = performance.now();
      await fns[k]?.();
      samples[k]?.push(performance.now() - s);
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
  return samples.map(quantiles);
}

/** Calls `fn` over and over for `ms` milliseconds (JIT and caches warm before a latency measurement). */
export async function warmUp(fn: () => Promise<unknown>, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) await fn();
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

export interface BenchRelay {
  relay: ChildProcess;
  ready: { url: string; caPin: string; adminKey: string };
  /** Port of the byte-source upstream (UPSTREAM_SRC) the agents will serve. */
  upPort: number;
  /** Environment for `tunnel-relay` admin commands against this relay. */
  env: NodeJS.ProcessEnv;
}

/** `tunnel-relay serve` on a loopback port with UDP and STUN off and warn-level logs, plus `extraArgs`. */
export async function startServe(
  dataDir: string,
  extraArgs: string[] = [],
): Promise<{ proc: ChildProcess; ready: { url: string; caPin: string; adminKey: string | null } }> {
  const proc = start(process.execPath, [RELAY_BIN, ...loopbackServeArgs(dataDir), ...extraArgs]);
  const ready = JSON.parse(await firstLine(proc)) as { url: string; caPin: string; adminKey?: string | null };
  return { proc, ready: { url: ready.url, caPin: ready.caPin, adminKey: ready.adminKey ?? null } };
}

/** Starts the byte-source upstream and `tunnel-relay serve` (data in `dir`/relay, UDP and STUN off). */
export async function startRelayAndUpstream(dir: string): Promise<BenchRelay> {
  const up = start(process.execPath, ['-e', UPSTREAM_SRC]);
  const upPort = Number(await firstLine(up));
  const { proc: relay, ready: served } = await startServe(join(dir, 'relay'));
  const ready = { ...served, adminKey: served.adminKey ?? '' };
  const env = {
    ...process.env,
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: ready.adminKey,
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  };
  return { relay, ready, upPort, env };
}

/**
 * Creates cluster `name` on the relay, starts a `tunnel-client` agent for it serving `upPort` (state in
 * `dir`/agent), waits until the relay shows it connected, and returns the agent and the relay's CA (from
 * the cluster's kubeconfig) for CONNECT dials.
 */
export async function startBenchAgent(
  env: NodeJS.ProcessEnv,
  dir: string,
  upPort: number,
  name = 'bench',
): Promise<{ agent: ChildProcess; ca: string }> {
  const created = await runJson(['cluster', 'create', name], env);
  const joinArgs = joinCommandWords((created.bootstrap as { joinCommand: string }).joinCommand);
  const agent = start(process.execPath, [
    CLIENT_BIN,
    ...joinArgs,
    '--upstream',
    `http://127.0.0.1:${upPort}`,
    '--state-dir',
    join(dir, 'agent'),
  ]);
  for (let i = 0; ; i++) {
    const c = await runJson(['cluster', 'get', name], env);
    if (c.connected === true) break;
    if (i > 150) throw new Error('agent did not connect');
    await new Promise((r) => setTimeout(r, 200));
  }
  const kc = await runJson(['kubeconfig', name], env);
  const ca = Buffer.from(
    (kc.clusters as Array<{ cluster: Record<string, string> }>)[0]?.cluster['certificate-authority-data'] ??
      '',
    'base64',
  ).toString();
  return { agent, ca };
}
