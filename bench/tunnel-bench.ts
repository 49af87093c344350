/**
 * Hub -> agent tunnel benchmark against an SSH reverse tunnel, in one run:
 *  (a) bulk download of one stream: direct TCP to a byte source, through `ssh -R` (the agent's role
 *      played by an ssh client dialing a local sshd on loopback; the download enters at sshd's
 *      forwarded port), and through the relay's CONNECT proxy to a `tunnel-client` agent;
 *  (b) fairness: p50/p99 of small requests (new CONNECT each, 100-byte answer) through the relay
 *      with and without one bulk stream saturating the same agent; the same for ssh -R.
 * Real binaries (`tunnel-relay serve`, `tunnel-client join`, /usr/sbin/sshd, ssh). sshd runs with a
 * throw-away host key and a throw-away user key in a temp dir, only that key accepted, loopback only;
 * it needs root (it is skipped with a note otherwise) and `openssh-server` installed.
 * `node dist/bench/tunnel-bench.js [MiB per bulk download, default 256] [small-request samples, default 300]`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { describeMachine } from './machine.js';

const here = dirname(fileURLToPath(import.meta.url));
const RELAY_BIN = join(here, '../relay/cli/main.js');
const CLIENT_BIN = join(here, '../tunnel-client/cli/main.js');
const MB = Number(process.argv[2] ?? '256');
const SAMPLES = Number(process.argv[3] ?? '300');
const SSHD = '/usr/sbin/sshd';
const children: ChildProcess[] = [];

/** A byte source: `GET /<bytes>` is answered with that many bytes, then the connection closes. */
const UPSTREAM_SRC = `
const net = require('node:net');
const blk = Buffer.alloc(65536, 97);
net.createServer((c) => {
  let head = '';
  c.on('data', (d) => {
    if (head === null) return;
    head += d.toString('latin1');
    const end = head.indexOf('\\r\\n\\r\\n');
    if (end < 0) return;
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

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const c = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  c.stderr?.resume();
  children.push(c);
  return c;
}

function firstLine(c: ChildProcess): Promise<string> {
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

async function runJson(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const c = start(process.execPath, [RELAY_BIN, ...args, '--output', 'json'], env);
  let out = '';
  c.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await once(c, 'exit');
  return JSON.parse(out) as Record<string, unknown>;
}

type Dial = () => Promise<net.Socket>;

function direct(port: number): Dial {
  return () =>
    new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
}

function connectVia(relayUrl: string, ca: string, key: string, target: string): Dial {
  const u = new URL(relayUrl);
  return () =>
    new Promise((resolve, reject) => {
      const s = tls.connect({ host: u.hostname, port: Number(u.port), ca, servername: 'localhost' });
      let buf = '';
      const onData = (c: Buffer): void => {
        buf += c.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        s.off('data', onData);
        if (buf.startsWith('HTTP/1.1 200')) resolve(s);
        else reject(new Error(buf.split('\r\n')[0]));
      };
      s.on('data', onData);
      s.once('error', reject);
      s.once('secureConnect', () =>
        s.write(
          `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`,
        ),
      );
    });
}

/** Downloads `bytes`; resolves with the bytes received (headers included). */
async function download(dial: Dial, bytes: number): Promise<number> {
  const s = await dial();
  let got = 0;
  s.on('data', (d: Buffer) => {
    got += d.length;
  });
  s.write(`GET /${bytes} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await once(s, 'end');
  s.destroy();
  return got;
}

/** CPU seconds (user + system) a process has used so far, from /proc (0 where unavailable). */
function procCpu(pid: number | undefined): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Best of 3 single-stream downloads of MB MiB, in MB/s (10^6 B/s). */
async function bulk(dial: Dial): Promise<{ mbps: number }> {
  let best = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const got = await download(dial, MB * 1024 * 1024);
    best = Math.max(best, got / 1e6 / ((performance.now() - t0) / 1000));
  }
  return { mbps: best };
}

async function latency(fn: () => Promise<unknown>, n: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 10; i++) await fn();
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  t.sort((a, b) => a - b);
  return { p50: t[Math.floor(n * 0.5)] ?? 0, p99: t[Math.floor(n * 0.99)] ?? 0 };
}

/** One endless download on `dial` until stop(); resolves stop() with the MB/s it got meanwhile. */
async function saturate(dial: Dial): Promise<() => number> {
  const s = await dial();
  let got = 0;
  s.on('data', (d: Buffer) => {
    got += d.length;
  });
  s.on('error', () => {});
  s.write(`GET /${1024 * 1024 * 1024 * 1024} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await new Promise((r) => setTimeout(r, 1500)); // let it reach full speed
  const g0 = got;
  const t0 = performance.now();
  return () => {
    const mbps = (got - g0) / 1e6 / ((performance.now() - t0) / 1000);
    s.destroy();
    return mbps;
  };
}

async function freePort(): Promise<number> {
  const srv = net.createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** sshd on loopback with throw-away keys, and `ssh -N -R` forwarding sshd's `remotePort` to the byte source. */
async function sshReverse(
  dir: string,
  upPort: number,
): Promise<{ port: number; pids: (number | undefined)[] }> {
  const d = join(dir, 'ssh');
  mkdirSync(d, { mode: 0o700 });
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // privilege separation directory
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(d, 'host_key')]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(d, 'user_key')]);
  writeFileSync(join(d, 'authorized_keys'), readFileSync(join(d, 'user_key.pub')), { mode: 0o600 });
  const sshPort = await freePort();
  const port = await freePort();
  writeFileSync(
    join(d, 'sshd_config'),
    [
      `ListenAddress 127.0.0.1:${sshPort}`,
      `HostKey ${join(d, 'host_key')}`,
      `AuthorizedKeysFile ${join(d, 'authorized_keys')}`,
      `PidFile ${join(d, 'sshd.pid')}`,
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PubkeyAuthentication yes',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'AllowTcpForwarding remote',
      'GatewayPorts no',
      'X11Forwarding no',
      'PermitTTY no',
      'LogLevel ERROR',
    ].join('\n'),
  );
  const sshd = start(SSHD, ['-D', '-e', '-f', join(d, 'sshd_config')]);
  await new Promise((r) => setTimeout(r, 500));
  const ssh = start('ssh', [
    '-N',
    '-i',
    join(d, 'user_key'),
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    `UserKnownHostsFile=${join(d, 'known_hosts')}`,
    '-o',
    'ExitOnForwardFailure=yes',
    '-o',
    'BatchMode=yes',
    '-p',
    String(sshPort),
    '-R',
    `127.0.0.1:${port}:127.0.0.1:${upPort}`,
    'root@127.0.0.1',
  ]);
  for (let i = 0; ; i++) {
    try {
      await download(direct(port), 10);
      break;
    } catch {
      if (i > 50 || ssh.exitCode !== null) throw new Error('ssh -R did not come up');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // The per-connection sshd child does the forwarding; count the listener and the ssh client.
  return { port, pids: [sshd.pid, ssh.pid] };
}

/** CPU of a process and its children (sshd forks one per connection), from /proc (Linux). */
function treeCpu(pid: number | undefined): number {
  if (pid === undefined) return 0;
  let total = procCpu(pid);
  try {
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)) {
      if (task) total += treeCpu(Number(task));
    }
  } catch {
    // no children file: the process alone
  }
  return total;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tunnel-bench-'));
  try {
    console.log(`machine: ${describeMachine()}`);
    const up = start(process.execPath, ['-e', UPSTREAM_SRC]);
    const upPort = Number(await firstLine(up));
    const relay = start(process.execPath, [
      RELAY_BIN,
      'serve',
      '--output',
      'json',
      '--listen',
      '127.0.0.1:0',
      '--data-dir',
      join(dir, 'relay'),
      '--udp-port',
      'off',
      '--stun-port',
      'off',
      '--log-level',
      'warn',
    ]);
    const ready = JSON.parse(await firstLine(relay)) as { url: string; caPin: string; adminKey: string };
    const env = {
      ...process.env,
      TUNNEL_RELAY_URL: ready.url,
      TUNNEL_ACCESS_KEY: ready.adminKey,
      TUNNEL_RELAY_CA_PIN: ready.caPin,
    };
    const created = await runJson(['cluster', 'create', 'bench'], env);
    const joinArgs = (created.bootstrap as { joinCommand: string }).joinCommand.split(' ').slice(1);
    const agent = start(process.execPath, [
      CLIENT_BIN,
      ...joinArgs,
      '--upstream',
      `http://127.0.0.1:${upPort}`,
      '--state-dir',
      join(dir, 'agent'),
    ]);
    for (let i = 0; ; i++) {
      const c = await runJson(['cluster', 'get', 'bench'], env);
      if (c.connected === true) break;
      if (i > 150) throw new Error('agent did not connect');
      await new Promise((r) => setTimeout(r, 200));
    }
    const kc = await runJson(['kubeconfig', 'bench'], env);
    const ca = Buffer.from(
      (kc.clusters as Array<{ cluster: Record<string, string> }>)[0]?.cluster['certificate-authority-data'] ??
        '',
      'base64',
    ).toString();
    const via = connectVia(ready.url, ca, ready.adminKey, `bench.clusters.local:${upPort}`);

    const canSsh = process.getuid?.() === 0 && existsSync(SSHD);
    const ssh = canSsh ? await sshReverse(dir, upPort) : undefined;
    if (!ssh) console.log('(ssh -R skipped: needs root and openssh-server)');

    console.log(`\n(a) bulk download, one stream of ${MB} MiB, best of 3 (MB/s = 10^6 B/s)`);
    console.log('| path | MB/s | vs direct | vs ssh -R | tunnel CPU s |');
    console.log('|---|---|---|---|---|');
    const d = await bulk(direct(upPort));
    const s = ssh ? await bulk(direct(ssh.port)) : undefined;
    const sCpu = ssh ? await bulkCpu(direct(ssh.port), ssh.pids) : 0;
    const c = await bulk(via);
    const cCpu = await bulkCpu(via, [relay.pid, agent.pid]);
    const pct = (a: number, b: number | undefined): string => (b ? `${((a / b) * 100).toFixed(0)}%` : '-');
    console.log(`| direct TCP | ${d.mbps.toFixed(1)} | 100% | ${pct(d.mbps, s?.mbps)} | - |`);
    if (s)
      console.log(
        `| ssh -R (sshd + ssh) | ${s.mbps.toFixed(1)} | ${pct(s.mbps, d.mbps)} | 100% | ${sCpu.toFixed(2)} |`,
      );
    console.log(
      `| CONNECT via relay + agent | ${c.mbps.toFixed(1)} | ${pct(c.mbps, d.mbps)} | ${pct(c.mbps, s?.mbps)} | ${cCpu.toFixed(2)} |`,
    );

    console.log(`\n(b) small requests (GET of 100 bytes, new connection each), ${SAMPLES} samples`);
    console.log('| path | bulk stream on the same tunnel | p50 ms | p99 ms | bulk MB/s meanwhile |');
    console.log('|---|---|---|---|---|');
    const paths: [string, Dial][] = [['CONNECT via relay + agent', via]];
    if (ssh) paths.push(['ssh -R', direct(ssh.port)]);
    for (const [name, dial] of paths) {
      const idle = await latency(() => download(dial, 100), SAMPLES);
      console.log(`| ${name} | no | ${idle.p50.toFixed(2)} | ${idle.p99.toFixed(2)} | - |`);
      const stop = await saturate(dial);
      const busy = await latency(() => download(dial, 100), SAMPLES);
      const mbps = stop();
      console.log(`| ${name} | yes | ${busy.p50.toFixed(2)} | ${busy.p99.toFixed(2)} | ${mbps.toFixed(1)} |`);
    }
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU seconds the tunnel processes (and their children) spend on one download of MB MiB. */
async function bulkCpu(dial: Dial, pids: (number | undefined)[]): Promise<number> {
  const c0 = pids.reduce<number>((a, p) => a + treeCpu(p), 0);
  await download(dial, MB * 1024 * 1024);
  return pids.reduce<number>((a, p) => a + treeCpu(p), 0) - c0;
}

main().catch((err: unknown) => {
  console.error(`tunnel bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
