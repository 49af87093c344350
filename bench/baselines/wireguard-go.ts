/**
 * wireguard-go <-> wireguard-go baseline: two network namespaces joined by a veth pair, each
 * running the real wireguard-go (configured through shared/wg-cli, via the test harness), and a
 * TCP bulk transfer from one to the other through the tunnel, next to the same transfer over the
 * bare veth. Needs root, /dev/net/tun, wireguard-go, wireguard-tools and iproute2.
 * Reference figures on the 2-vCPU build machine: veth ~28.5 Gbit/s, tunnel ~450 Mbit/s (iperf3).
 */
import { generateKeyPair } from '../../shared/keys.js';
import { cleanupMark, cleanupSince } from '../../test/helpers/cleanup.js';
import { createNetns, linkNetns, type Netns } from '../../test/helpers/netns.js';
import { integrationProblems } from '../../test/helpers/privileges.js';
import { startWireguardGo } from '../../test/helpers/wireguard-go.js';
import type { TransferResult } from './tcp.js';

/** Inline Node programs run inside the namespaces (no build step needed there). */
const SINK_JS = `
const net = require('node:net');
const [port, bytes] = process.argv.slice(1).map(Number);
let n = 0, start = 0;
const srv = net.createServer((s) => {
  s.on('data', (d) => {
    if (n === 0) start = performance.now();
    n += d.length;
    if (n >= bytes) {
      console.log(JSON.stringify({ bytes: n, seconds: (performance.now() - start) / 1000 }));
      process.exit(0);
    }
  });
});
srv.listen(port, () => console.log('listening'));
setTimeout(() => { console.error('sink timeout at ' + n); process.exit(2); }, 120000).unref();
`;

/** Opens `streams` connections and sends bytes / streams on each (the last one takes the remainder). */
const SOURCE_JS = `
const net = require('node:net');
const [host, port, bytes, streams] = process.argv.slice(1);
const chunk = Buffer.alloc(65536, 0x5a);
const n = Number(streams);
for (let i = 0; i < n; i++) {
  let left = Math.floor(Number(bytes) / n) + (i === n - 1 ? Number(bytes) % n : 0);
  const s = net.connect(Number(port), host, () => {
    const pump = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!s.write(piece)) return s.once('drain', pump);
      }
      s.end();
    };
    pump();
  });
  s.on('error', (e) => { console.error(e.message); process.exit(1); });
}
`;

async function transfer(
  from: Netns,
  to: Netns,
  host: string,
  port: number,
  bytes: number,
  streams = 1,
): Promise<TransferResult> {
  const sink = to.spawn(process.execPath, ['-e', SINK_JS, String(port), String(bytes)], {
    timeoutMs: 130_000,
  });
  const deadline = Date.now() + 10_000;
  while (!sink.output().includes('listening')) {
    if (!sink.isRunning() || Date.now() > deadline) throw new Error(`sink did not start: ${sink.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const src = from.spawn(
    process.execPath,
    ['-e', SOURCE_JS, host, String(port), String(bytes), String(streams)],
    {
      timeoutMs: 130_000,
    },
  );
  const r = await sink.exited;
  await src.stop(1000);
  const line = sink
    .output()
    .split('\n')
    .find((l) => l.startsWith('{'));
  if (r.code !== 0 || !line) throw new Error(`transfer failed: ${sink.output()} ${src.output()}`);
  const { seconds } = JSON.parse(line) as { seconds: number };
  return { bytes, seconds, bitsPerSecond: (bytes * 8) / seconds };
}

export interface WireguardGoBaseline {
  readonly veth: TransferResult;
  /** One TCP connection through the tunnel. */
  readonly tunnel: TransferResult;
  /** The same bytes over `streams` parallel TCP connections through the tunnel, when asked for. */
  readonly tunnelParallel?: TransferResult;
}

/**
 * Measures `bytes` over the bare veth and through wireguard-go <-> wireguard-go, and with `streams` > 1
 * also over that many parallel connections through the tunnel. `subnet` selects the /24 for the veth (the
 * tunnel uses 10.209.250.0/24). Throws with the reasons when the machine lacks root or tools. Everything
 * is torn down before returning.
 */
export async function measureWireguardGoPair(
  bytes = 200e6,
  subnet = '10.209.251.0/24',
  streams = 1,
): Promise<WireguardGoBaseline> {
  const problems = integrationProblems();
  if (problems.length) throw new Error(`wireguard-go baseline cannot run: ${problems.join('; ')}`);
  // Only what this call made is torn down: a benchmark may hold namespaces of its own meanwhile.
  const mark = cleanupMark();
  try {
    const a = await createNetns('bwg-a');
    const b = await createNetns('bwg-b');
    const link = await linkNetns(a, b, subnet);
    const ka = generateKeyPair();
    const kb = generateKeyPair();
    await startWireguardGo(a, {
      privateKey: ka.privateKey,
      listenPort: 51811,
      address: '10.209.250.1/24',
      peers: [
        { publicKey: kb.publicKey, endpoint: `${link.bAddress}:51812`, allowedIps: ['10.209.250.2/32'] },
      ],
      logLevel: 'error',
    });
    await startWireguardGo(b, {
      privateKey: kb.privateKey,
      listenPort: 51812,
      address: '10.209.250.2/24',
      peers: [{ publicKey: ka.publicKey, allowedIps: ['10.209.250.1/32'] }],
      logLevel: 'error',
    });
    const veth = await transfer(a, b, link.bAddress, 5201, bytes);
    const tunnel = await transfer(a, b, '10.209.250.2', 5202, bytes);
    if (streams <= 1) return { veth, tunnel };
    return { veth, tunnel, tunnelParallel: await transfer(a, b, '10.209.250.2', 5203, bytes, streams) };
  } finally {
    await cleanupSince(mark);
  }
}
