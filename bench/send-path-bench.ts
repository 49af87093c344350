/**
 * The agent's send path for stream datagrams, in process and without I/O: ARQ DatagramWriter ->
 * wrapStreamDatagram (inner IPv4/UDP) -> sealTransport (WireGuard) -> encodeSendPacket (DERP frame), at
 * the relay MTU. Baseline: the copying path (datagrams without room, every layer allocates and copies, as
 * before shared/net/buffers/packet-room.ts). Compared: the same datagrams with the room the layers declare for a
 * relayed peer (streamDatagramRoom(transportRoom(relayed path))), where every layer writes in place. Reports MB/s, CPU seconds per GiB and GCs (major/minor, ms) per GiB, each
 * mode run alternately; the in-place figures as a ratio of the baseline measured in this run.
 * Run: npm run build:tools && node dist/bench/send-path-bench.js [MiB per run, default 512] [rounds, default 3]
 */
import { type PerformanceEntry, PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { newArqStats } from '../shared/net/arq/arq-options.js';
import { DatagramWriter } from '../shared/net/arq/datagram-writer.js';
import { CMD_PUSH, SEG_HEADER } from '../shared/net/arq/segment.js';
import { encodeSendPacket } from '../shared/net/derp/frames.js';
import { RelayedPath } from '../shared/net/tunnel-endpoint/relayed-path.js';
import { streamDatagramRoom, wrapStreamDatagram } from '../shared/net/tunnel-streams/inner-udp.js';
import { defaultAead } from '../shared/net/wireguard/crypto/aead.js';
import { Keypair } from '../shared/net/wireguard/keypair.js';
import { sealTransport, transportRoom } from '../shared/net/wireguard/transport.js';
import { describeMachine, ratio } from './machine.js';

const MIB = Number(process.argv[2] ?? '512');
/** Inner packets and ARQ datagrams towards a relayed peer, as a tunnel endpoint declares them. */
const INNER = transportRoom(new RelayedPath({ send: () => true }, Buffer.alloc(32)));
const ARQ = streamDatagramRoom(INNER);
const ROUNDS = Number(process.argv[3] ?? '3');

interface Result {
  mbps: number;
  cpuPerGiB: number;
  majorPerGiB: number;
  minorPerGiB: number;
  gcMsPerGiB: number;
}

const gc = { major: 0, minor: 0, ms: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === perf.NODE_PERFORMANCE_GC_MAJOR) gc.major++;
    else if (kind === perf.NODE_PERFORMANCE_GC_MINOR) gc.minor++;
    gc.ms += e.duration;
  }
}).observe({ entryTypes: ['gc'] });

async function run(inPlace: boolean): Promise<Result> {
  const aead = defaultAead();
  const kp = new Keypair(Buffer.alloc(32, 3), Buffer.alloc(32), 1, 77, true, 0);
  const nonce = Buffer.alloc(12);
  const dst = Buffer.alloc(32, 9);
  let sink = 0;
  const w = new DatagramWriter({
    conv: 5,
    incarnation: 1,
    mtu: ARQ.mtu,
    output: (d) => {
      const inner = wrapStreamDatagram(0x64400002, 0x64400001, d);
      const frame = encodeSendPacket(dst, sealTransport(aead, kp, inner, INNER.mtu, nonce));
      sink ^= frame[frame.length - 1]!;
    },
    stats: newArqStats(),
    headroom: inPlace ? ARQ.headroom : 0,
    tailroom: inPlace ? ARQ.tailroom : 0,
  });
  const fields = { cmd: CMD_PUSH, wnd: 64, ts: 0, sn: 0, una: 0, fragOffset: -1, fragTotal: 0 };
  const seg = Buffer.alloc(ARQ.mtu - SEG_HEADER, 1);
  const n = Math.ceil((MIB * 1024 * 1024) / seg.length);
  await new Promise((r) => setTimeout(r, 100)); // let the previous run's garbage go first
  const g0 = { ...gc };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    fields.ts = i;
    fields.sn = i;
    w.put(fields, seg);
  }
  w.finish();
  const s = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  await new Promise((r) => setTimeout(r, 50)); // GC entries arrive asynchronously
  const gib = (n * seg.length) / 2 ** 30;
  if (sink < 0) console.log(sink);
  return {
    mbps: (n * seg.length) / 1e6 / s,
    cpuPerGiB: (c.user + c.system) / 1e6 / gib,
    majorPerGiB: (gc.major - g0.major) / gib,
    minorPerGiB: (gc.minor - g0.minor) / gib,
    gcMsPerGiB: (gc.ms - g0.ms) / gib,
  };
}

function best(rs: Result[]): Result {
  const min = (f: (r: Result) => number) => Math.min(...rs.map(f));
  return {
    mbps: Math.max(...rs.map((r) => r.mbps)),
    cpuPerGiB: min((r) => r.cpuPerGiB),
    majorPerGiB: min((r) => r.majorPerGiB),
    minorPerGiB: min((r) => r.minorPerGiB),
    gcMsPerGiB: min((r) => r.gcMsPerGiB),
  };
}

async function main(): Promise<void> {
  console.log(`# send-path-bench on ${describeMachine()}, ${MIB} MiB per run, best of ${ROUNDS}`);
  const copy: Result[] = [];
  const room: Result[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    copy.push(await run(false));
    room.push(await run(true));
  }
  const a = best(copy);
  const b = best(room);
  console.log('| send path | MB/s | CPU s / GiB | major GCs / GiB | minor GCs / GiB | GC ms / GiB |');
  console.log('|---|---|---|---|---|---|');
  const row = (name: string, r: Result) =>
    `| ${name} | ${r.mbps.toFixed(0)} | ${r.cpuPerGiB.toFixed(2)} | ${r.majorPerGiB.toFixed(1)} | ${r.minorPerGiB.toFixed(1)} | ${r.gcMsPerGiB.toFixed(0)} |`;
  console.log(row('copy per layer (baseline)', a));
  console.log(row('in place (packet room)', b));
  console.log(
    `in place / baseline: MB/s ${ratio(b.mbps, a.mbps)}, CPU ${ratio(b.cpuPerGiB, a.cpuPerGiB)}, GC ms ${ratio(b.gcMsPerGiB, a.gcMsPerGiB)}`,
  );
}

main().catch((err: unknown) => {
  console.error(`send-path bench failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
