/**
 * Throughput of mux-over-ARQ over an in-memory lossless datagram path (one process, so CPU-bound on one
 * core), at MTU 1392 (UDP path) and 65,000 (relay path), with 1 and 16 streams, against a baseline measured
 * in the same run: the same bytes over a plain Node TCP loopback connection.
 *
 * Run: npm run build:tools && node dist/bench/streams-bench.js [MiB per case, default 64]
 */
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import { realClock } from '../shared/clock.js';
import { ArqSession } from '../shared/net/arq/arq-session.js';
import type { MuxStream } from '../shared/net/mux/mux-stream.js';
import { muxOverArq } from '../shared/net/mux/transport.js';

const MiB = 1024 * 1024;
const CHUNK = 64 * 1024;

interface Result {
  seconds: number;
  cpuSeconds: number;
}

async function measure(run: () => Promise<void>): Promise<Result> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const cpu = process.cpuUsage(cpu0);
  return { seconds: (performance.now() - t0) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
}

function writeN(w: NodeJS.WritableStream & { once(ev: 'drain', fn: () => void): unknown }, total: number) {
  const buf = Buffer.alloc(CHUNK, 0xab);
  return new Promise<void>((resolve) => {
    let left = total;
    const go = (): void => {
      while (left > 0) {
        const n = Math.min(CHUNK, left);
        left -= n;
        const ok = w.write(n === CHUNK ? buf : buf.subarray(0, n));
        if (!ok && left > 0) {
          w.once('drain', go);
          return;
        }
      }
      w.end();
      resolve();
    };
    go();
  });
}

async function tcpBaseline(total: number): Promise<Result> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const r = await measure(async () => {
    const received = new Promise<void>((resolve) => {
      server.once('connection', (sock) => {
        let got = 0;
        sock.on('data', (c: Buffer) => {
          got += c.length;
        });
        sock.on('end', () => {
          if (got !== total) throw new Error(`tcp: got ${got} of ${total}`);
          resolve();
        });
      });
    });
    const client = net.connect(port, '127.0.0.1');
    await once(client, 'connect');
    await writeN(client, total);
    await received;
  });
  server.close();
  return r;
}

/** In-memory datagram path: datagrams are queued and delivered in batches on the next event-loop turn. */
function memoryLink(deliver: (d: Buffer) => void): (d: Buffer) => void {
  let q: Buffer[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch = q;
    q = [];
    for (const d of batch) deliver(d);
  };
  return (d) => {
    q.push(d);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

async function muxOverArqRun(total: number, mtu: number, streams: number): Promise<Result> {
  let arqB: ArqSession | undefined;
  const arqA: ArqSession = new ArqSession({
    conv: 1,
    mtu,
    clock: realClock,
    defer: setImmediate,
    output: memoryLink((d) => arqB!.input(d)),
  });
  arqB = new ArqSession({
    conv: 1,
    mtu,
    clock: realClock,
    defer: setImmediate,
    output: memoryLink((d) => arqA.input(d)),
  });
  const client = muxOverArq(arqA, { clock: realClock, role: 'client', keepAliveMs: 0 });
  const server = muxOverArq(arqB, { clock: realClock, role: 'server', keepAliveMs: 0 });
  const per = Math.floor(total / streams);
  const r = await measure(async () => {
    let ended = 0;
    let got = 0;
    const done = new Promise<void>((resolve) => {
      server.on('stream', (s: MuxStream) => {
        s.on('data', (c: Buffer) => {
          got += c.length;
        });
        s.on('end', () => {
          if (++ended === streams) resolve();
        });
      });
    });
    for (let i = 0; i < streams; i++) void writeN(client.open(), per);
    await done;
    if (got !== per * streams) throw new Error(`mux: got ${got} of ${per * streams}`);
  });
  client.close();
  server.close();
  arqA.close();
  arqB.close();
  return r;
}

async function main(): Promise<void> {
  const mib = Number(process.argv[2] ?? 64);
  // The injected real clock's timers are unref'd; keep the process alive while the benchmark runs.
  const keepAlive = setInterval(() => {}, 1_000);
  const total = mib * MiB;
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`# streams-bench: ${mib} MiB per case, node ${process.version}, ${os.cpus().length} x ${cpu}`);
  // Warm-up runs (JIT) for every code path, then the measured runs.
  await tcpBaseline(Math.min(total, 8 * MiB));
  await muxOverArqRun(8 * MiB, 1392, 4);
  await muxOverArqRun(8 * MiB, 65_000, 4);
  const base = await tcpBaseline(total);
  const baseMBs = total / MiB / base.seconds;
  const baseCpu = total / MiB / base.cpuSeconds;
  console.log('| case | MB/s (wall) | ratio to TCP | CPU s | MB per CPU-second | ratio to TCP |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| TCP loopback (baseline) | ${baseMBs.toFixed(1)} | 1.00 | ${base.cpuSeconds.toFixed(2)} | ${baseCpu.toFixed(0)} | 1.00 |`,
  );
  for (const mtu of [1392, 65_000]) {
    for (const streams of [1, 16]) {
      const r = await muxOverArqRun(total, mtu, streams);
      const mbs = total / MiB / r.seconds;
      const cpuMbs = total / MiB / r.cpuSeconds;
      const name = `mux/ARQ mtu ${mtu}, ${streams} stream${streams > 1 ? 's' : ''}`;
      console.log(
        `| ${name} | ${mbs.toFixed(1)} | ${(mbs / baseMBs).toFixed(3)} | ${r.cpuSeconds.toFixed(2)} | ${cpuMbs.toFixed(0)} | ${(cpuMbs / baseCpu).toFixed(3)} |`,
      );
    }
  }
  clearInterval(keepAlive);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
