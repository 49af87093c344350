/**
 * DERP relay benchmark (short). The relay runs in a child process (its own core); the clients run here.
 * - Forwarding A -> B through the relay (TLS WebSocket both legs) at 1,400 B and 16 KiB packets, packets/s
 *   and Gbit/s, next to a socat TCP relay carrying the same framed stream (no TLS) measured in this run.
 * - Connect storm: N clients started at once; time until all are connected (handshake included).
 * - Memory per idle connected client: relay process RSS and heap delta / N after gc.
 * Run: npm run build:tools && node dist/bench/derp-bench.js [seconds-per-throughput-run=3] [clients=2000]
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { createDerpServer } from '../relay/data/derp/server.js';
import { generateKeyPair, type KeyPair } from '../shared/keys.js';
import { connectDerp, type DerpClient } from '../shared/net/derp/client.js';
import { FrameParser } from '../shared/net/derp/frame-parser.js';
import { encodeSendPacket } from '../shared/net/derp/frames.js';
import { pinOfCertificate } from '../shared/tls-pin.js';
import { makeSelfSignedCert } from '../test/helpers/test-cert.js';
import { describeMachine, ratio } from './machine.js';

interface RelayInfo {
  port: number;
  /** The same relay on plain HTTP (ws://), to separate the relay's own memory from Node's TLS. */
  plainPort: number;
  /** A bare TLS server in the same process that only holds sockets: Node's own cost per TLS connection. */
  rawTlsPort: number;
  pin: string;
  publicKey: string;
}
interface MemInfo {
  rss: number;
  heapUsed: number;
  external: number;
  clients: number;
  rawTls: number;
  /** Relay process CPU time so far (user + system), ms. */
  cpuMs: number;
}

const WINDOW = 256;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- child: the relay process -------------------------------------------------------------------

async function relayChild(): Promise<void> {
  const cert = makeSelfSignedCert();
  const keyPair = generateKeyPair();
  const https = createHttpsServer({ key: cert.key, cert: cert.cert });
  const derp = createDerpServer({
    keyPair,
    admission: { isAdmitted: () => true },
    policy: { canSend: () => true },
    limits: { maxHandshaking: 10_000, handshakeTimeoutMs: 30_000 },
  });
  derp.attach(https);
  const plain = createHttpServer();
  derp.attach(plain);
  await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const rawSockets = new Set<Socket>();
  const rawTls = createTlsServer({ key: cert.key, cert: cert.cert }, (s) => {
    rawSockets.add(s);
    s.on('error', () => {});
    s.on('close', () => rawSockets.delete(s));
  });
  await new Promise<void>((r) => rawTls.listen(0, '127.0.0.1', r));
  const info: RelayInfo = {
    rawTlsPort: (rawTls.address() as AddressInfo).port,
    port: (https.address() as AddressInfo).port,
    plainPort: (plain.address() as AddressInfo).port,
    pin: pinOfCertificate(cert.der),
    publicKey: keyPair.publicKey.toString('base64'),
  };
  process.send!({ ready: info });
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'cpu') {
      const cpu = process.cpuUsage();
      process.send!({ cpuMs: (cpu.user + cpu.system) / 1000 });
    } else if (m.cmd === 'mem') {
      for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
      const u = process.memoryUsage();
      const cpu = process.cpuUsage();
      const mem: MemInfo = {
        rss: u.rss,
        heapUsed: u.heapUsed,
        external: u.external,
        clients: derp.stats.clients,
        rawTls: rawSockets.size,
        cpuMs: (cpu.user + cpu.system) / 1000,
      };
      process.send!({ mem });
    } else if (m.cmd === 'exit') {
      process.exit(0);
    }
  });
}

function startRelayChild(): Promise<{ child: ChildProcess; info: RelayInfo }> {
  const child = fork(fileURLToPath(import.meta.url), ['relay-child'], { execArgv: ['--expose-gc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (m: { ready?: RelayInfo }) => {
      if (m.ready) resolve({ child, info: m.ready });
    });
  });
}

function askMem(child: ChildProcess): Promise<MemInfo> {
  return new Promise((resolve) => {
    const on = (m: { mem?: MemInfo }) => {
      if (m.mem) {
        child.off('message', on);
        resolve(m.mem);
      }
    };
    child.on('message', on);
    child.send({ cmd: 'mem' });
  });
}

function askCpu(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: { cpuMs?: number }) => {
      if (m.cpuMs !== undefined) {
        child.off('message', on);
        resolve(m.cpuMs);
      }
    };
    child.on('message', on);
    child.send({ cmd: 'cpu' });
  });
}

// --- throughput -----------------------------------------------------------------------------------

interface Rate {
  pps: number;
  gbps: number;
  /** Share of the packets sent in the window that did not arrive (the relay drops rather than blocks). */
  loss: number;
  /** Relay process CPU per forwarded packet, µs (DERP only). */
  relayUs?: number;
}

function rateOf(packets: number, sent: number, size: number, ms: number): Rate {
  const pps = (packets * 1000) / ms;
  return { pps, gbps: (pps * size * 8) / 1e9, loss: sent > 0 ? Math.max(0, 1 - packets / sent) : 0 };
}

async function derpThroughput(
  child: ChildProcess,
  info: RelayInfo,
  size: number,
  seconds: number,
): Promise<Rate> {
  const url = `wss://127.0.0.1:${info.port}/derp`;
  let got = 0;
  const mk = (kp: KeyPair, onPacket: () => void): DerpClient =>
    connectDerp({ url, keyPair: kp, caPin: info.pin, onPacket, writeHighWaterBytes: 512 * 1024 });
  const ka = generateKeyPair();
  const kb = generateKeyPair();
  const a = mk(ka, () => {});
  const b = mk(kb, () => {
    got++;
  });
  await Promise.all([a.whenConnected(), b.whenConnected()]);
  const payload = Buffer.alloc(size, 0x5a);
  let running = true;
  let sent = 0;
  const pump = async () => {
    while (running) {
      // A window of packets in flight stands in for the congestion control of the traffic inside the
      // tunnel: without it the sender outruns the receiver and the relay drops (by design) most packets.
      for (let i = 0; i < 64 && running && sent - got < WINDOW; i++) {
        if (!a.send(kb.publicKey, payload)) break;
        sent++;
      }
      await new Promise((r) => setImmediate(r));
    }
  };
  const p = pump();
  await sleep(500); // warm-up
  const c0 = await askCpu(child);
  const g0 = got;
  const s0 = sent;
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const r = rateOf(got - g0, sent - s0, size, performance.now() - t0);
  r.relayUs = (((await askCpu(child)) - c0) * 1000) / Math.max(1, got - g0);
  running = false;
  await p;
  a.close();
  b.close();
  return r;
}

async function socatThroughput(size: number, seconds: number): Promise<Rate> {
  let got = 0;
  const parser = new FrameParser(() => {
    got++;
  });
  const sinkSockets: Socket[] = [];
  const sink = createServer((s) => {
    sinkSockets.push(s);
    s.on('data', (d) => parser.push(d));
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const sinkPort = (sink.address() as AddressInfo).port;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const socat = spawn(
    'socat',
    [`TCP-LISTEN:${port},fork,reuseaddr,bind=127.0.0.1`, `TCP:127.0.0.1:${sinkPort}`],
    {
      stdio: 'ignore',
    },
  );
  let sock: Socket | undefined;
  for (let i = 0; i < 100 && !sock; i++) {
    await sleep(20);
    sock = await new Promise<Socket | undefined>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => resolve(s));
      s.once('error', () => resolve(undefined));
    });
  }
  if (!sock) throw new Error('socat did not start');
  const frame = encodeSendPacket(Buffer.alloc(32, 1), Buffer.alloc(size, 0x5a));
  let running = true;
  const pump = async () => {
    while (running) {
      let ok = true;
      for (let i = 0; i < 64 && ok; i++) ok = sock!.write(frame);
      if (!ok) await new Promise((r) => sock!.once('drain', r));
      else await new Promise((r) => setImmediate(r));
    }
  };
  const p = pump();
  await sleep(500);
  const g0 = got;
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const r = rateOf(got - g0, got - g0, size, performance.now() - t0);
  running = false;
  await p;
  sock.destroy();
  for (const s of sinkSockets) s.destroy();
  socat.kill();
  await new Promise<void>((r) => sink.close(() => r()));
  return r;
}

// --- storm and memory ---------------------------------------------------------------------------

async function stormAndMemory(
  child: ChildProcess,
  info: RelayInfo,
  n: number,
  tls: boolean,
): Promise<string[]> {
  const url = tls ? `wss://127.0.0.1:${info.port}/derp` : `ws://127.0.0.1:${info.plainPort}/derp`;
  const label = tls ? 'TLS (wss://)' : 'plain (ws://, TLS terminated elsewhere)';
  const before = await askMem(child);
  const keys = Array.from({ length: n }, () => generateKeyPair());
  let connected = 0;
  let retries = 0;
  const t0 = performance.now();
  const clients = keys.map((keyPair) =>
    connectDerp({
      url,
      keyPair,
      caPin: tls ? info.pin : undefined,
      onPacket: () => {},
      handshakeTimeoutMs: 60_000,
      onState: (e) => {
        if (e.state === 'connected') connected++;
        if (e.state === 'reconnecting') retries++;
      },
    }),
  );
  while (connected < n && performance.now() - t0 < 120_000) await sleep(5);
  const stormMs = performance.now() - t0;
  const atConnected = await askMem(child);
  await sleep(1000);
  const after = await askMem(child);
  const added = Math.max(1, after.clients - before.clients);
  const per = (a: number, b: number) => ((a - b) / added / 1024).toFixed(1);
  const lines = [
    `${label} connect storm: ${connected}/${n} clients connected in ${(stormMs / 1000).toFixed(2)} s ` +
      `(${Math.round((connected * 1000) / stormMs)}/s, ${retries} reconnects; relay CPU ` +
      `${((atConnected.cpuMs - before.cpuMs) / added).toFixed(2)} ms per connection)`,
    `${label} memory per idle client (${after.clients} connected, relay RSS ${(before.rss / 2 ** 20).toFixed(1)} -> ` +
      `${(after.rss / 2 ** 20).toFixed(1)} MiB): RSS ${per(after.rss, before.rss)} KiB, JS heap ` +
      `${per(after.heapUsed, before.heapUsed)} KiB, external ${per(after.external, before.external)} KiB`,
  ];
  for (const c of clients) c.close();
  return lines;
}

/** Node's own memory per idle TLS server socket (no HTTP, no WebSocket, no relay), for comparison. */
async function rawTlsMemory(child: ChildProcess, info: RelayInfo, n: number): Promise<string> {
  const before = await askMem(child);
  const socks = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve) => {
          const s = tlsConnect({ port: info.rawTlsPort, host: '127.0.0.1', rejectUnauthorized: false }, () =>
            resolve(s),
          );
          s.on('error', () => {});
        }),
    ),
  );
  await sleep(1000);
  const after = await askMem(child);
  const added = Math.max(1, after.rawTls - before.rawTls);
  for (const s of socks) s.destroy();
  return (
    `baseline: bare Node TLS server socket (${added} idle): RSS ${((after.rss - before.rss) / added / 1024).toFixed(1)} KiB, ` +
    `JS heap ${((after.heapUsed - before.heapUsed) / added / 1024).toFixed(1)} KiB per connection`
  );
}

// --- main -----------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 3);
  const n = Number(process.argv[3] ?? 2000);
  console.log(`derp-bench on ${describeMachine()}`);
  // Each part gets a fresh relay process: freed memory is not returned to the OS, so a second
  // measurement in the same process would reuse it and read low.
  const withRelay = async <T>(fn: (child: ChildProcess, info: RelayInfo) => Promise<T>): Promise<T> => {
    const { child, info } = await startRelayChild();
    try {
      return await fn(child, info);
    } finally {
      child.send({ cmd: 'exit' });
      await new Promise((r) => child.once('exit', r));
    }
  };
  await withRelay(async (child, info) => {
    console.log('| packet | relay | packets/s | Gbit/s | lost | vs socat | relay CPU per packet |');
    console.log('|---|---|---|---|---|---|---|');
    for (const size of [1400, 16 * 1024]) {
      const base = await socatThroughput(size, seconds);
      const fmt = (r: Rate) =>
        `${Math.round(r.pps).toLocaleString('en-US')} | ${r.gbps.toFixed(2)} | ${(r.loss * 100).toFixed(0)}%`;
      const derp = await derpThroughput(child, info, size, seconds);
      const us = derp.relayUs ?? 0;
      console.log(`| ${size} B | socat TCP (no TLS) | ${fmt(base)} | 100% | |`);
      console.log(
        `| ${size} B | DERP over TLS WebSocket | ${fmt(derp)} | ${ratio(derp.pps, base.pps)} | ` +
          `${us.toFixed(1)} µs (one core: ~${Math.round(1e6 / Math.max(us, 0.001)).toLocaleString('en-US')} packets/s) |`,
      );
    }
  });
  for (const tls of [true, false]) {
    const lines = await withRelay((child, info) => stormAndMemory(child, info, n, tls));
    for (const line of lines) console.log(line);
  }
  console.log(await withRelay((child, info) => rawTlsMemory(child, info, n)));
  console.log('reference: derper ~63 KB per connection in production; target <= 32 KiB');
}

if (process.argv[2] === 'relay-child') {
  relayChild().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
