/**
 * One endless bulk download in its own process, so that the process measuring small-request latency next
 * to it is not the one decrypting and counting the bulk bytes (a hub's kubectl and a big download are
 * separate processes too). Prints "ready" once the first bytes arrived; on SIGTERM prints the MB/s since
 * then (10^6 B/s) and exits.
 *
 *   node dist/bench/bulk-child.js direct <port>
 *   node dist/bench/bulk-child.js via <relayUrl> <caFile> <key> <target>
 */
import { readFileSync } from 'node:fs';
import { connectVia, type Dial, direct } from './tunnel-fixture.js';

const [mode, ...rest] = process.argv.slice(2);

function dialFromArgs(): Dial {
  if (mode === 'direct') return direct(Number(rest[0]));
  if (mode === 'via') {
    const [url = '', caFile = '', key = '', target = ''] = rest;
    return connectVia(url, readFileSync(caFile, 'utf8'), key, target);
  }
  throw new Error(`bulk-child: unknown mode ${mode}`);
}

async function main(): Promise<void> {
  const dial = dialFromArgs();
  const s = await dial();
  let got = 0;
  let t0 = 0;
  s.on('data', (d: Buffer) => {
    if (t0 === 0) {
      t0 = performance.now();
      process.stdout.write('ready\n');
      return;
    }
    got += d.length;
  });
  s.on('error', (err) => {
    process.stderr.write(`bulk-child: ${err.message}\n`);
    process.exit(1);
  });
  s.resume(); // a CONNECT dial hands its socket over paused
  s.write(`GET /${1024 ** 4} HTTP/1.1\r\nHost: x\r\n\r\n`);
  process.on('SIGTERM', () => {
    const mbps = t0 > 0 ? got / 1e6 / ((performance.now() - t0) / 1000) : 0;
    process.stdout.write(`${mbps.toFixed(1)}\n`, () => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bulk-child failed: ${(err as Error).message}\n`);
  process.exit(1);
});
