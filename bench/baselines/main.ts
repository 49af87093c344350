/**
 * Prints the baselines other benchmarks compare against, measured now on this machine:
 *   npm run build:tools && node dist/bench/baselines/main.js [megabytes]
 * The wireguard-go pair needs root; without it that line says why and the rest still runs.
 */
import { describeMachine } from '../machine.js';
import { formatRate, socatRelayTransfer, type TransferResult, tcpLoopbackTransfer } from './tcp.js';
import { measureWireguardGoPair } from './wireguard-go.js';

const mb = Number(process.argv[2] ?? 200);
const bytes = mb * 1e6;
const show = (what: string, r: TransferResult, base?: TransferResult): void => {
  const ratio = base
    ? ` (${((r.bitsPerSecond / base.bitsPerSecond) * 100).toFixed(1)}% of ${formatRate(base.bitsPerSecond)})`
    : '';
  console.log(
    `${what.padEnd(44)} ${formatRate(r.bitsPerSecond).padStart(14)}  ${r.seconds.toFixed(2)} s${ratio}`,
  );
};

console.log(`# baselines on ${describeMachine()}, ${mb} MB per transfer`);
const loop = await tcpLoopbackTransfer(bytes);
show('Node TCP over loopback', loop);
try {
  show('  through a socat TCP relay', await socatRelayTransfer(bytes), loop);
} catch (e) {
  console.log(`  socat relay: skipped (${(e as Error).message})`);
}
try {
  const wg = await measureWireguardGoPair(bytes);
  show('Node TCP over a veth between namespaces', wg.veth);
  show('  through wireguard-go <-> wireguard-go', wg.tunnel, wg.veth);
} catch (e) {
  console.log(`wireguard-go pair: skipped (${(e as Error).message})`);
}
