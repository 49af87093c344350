/**
 * TCP baselines that benchmarks measure in the same run as the thing they benchmark:
 * - tcpLoopbackTransfer: a plain Node TCP transfer over 127.0.0.1 (both ends in this process);
 * - socatRelayTransfer: the same transfer through a `socat` TCP relay (a user-space proxy baseline).
 * Both write in chunks, honour write() === false by waiting for 'drain', and time from connect to
 * the sink having received every byte.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TransferResult {
  readonly bytes: number;
  readonly seconds: number;
  readonly bitsPerSecond: number;
}

export function formatRate(bitsPerSecond: number): string {
  return bitsPerSecond >= 1e9
    ? `${(bitsPerSecond / 1e9).toFixed(2)} Gbit/s`
    : `${(bitsPerSecond / 1e6).toFixed(0)} Mbit/s`;
}

/**
 * A server on 127.0.0.1 that resolves `done` (with the time) once `bytes` have arrived in total;
 * empty connections (readiness probes) are harmless.
 */
export async function startSink(
  bytes: number,
): Promise<{ server: Server; port: number; done: Promise<number> }> {
  const server = createServer();
  let n = 0;
  const done = new Promise<number>((resolve) => {
    server.on('connection', (s: Socket) => {
      s.on('data', (d: Buffer) => {
        n += d.length;
        if (n >= bytes) resolve(performance.now());
      });
      s.on('error', () => s.destroy());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('sink has no port');
  return { server, port: addr.port, done };
}

/** Writes `bytes` in `chunkSize` pieces to host:port, respecting back-pressure. Returns the start time. */
export async function sendBytes(
  host: string,
  port: number,
  bytes: number,
  chunkSize = 64 * 1024,
): Promise<number> {
  const chunk = Buffer.alloc(chunkSize, 0x5a);
  const s = connect(port, host);
  await once(s, 'connect');
  const start = performance.now();
  let left = bytes;
  while (left > 0) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    left -= piece.length;
    if (!s.write(piece)) await once(s, 'drain');
  }
  s.end();
  return start;
}

export async function tcpLoopbackTransfer(bytes: number, chunkSize?: number): Promise<TransferResult> {
  const sink = await startSink(bytes);
  try {
    const start = await sendBytes('127.0.0.1', sink.port, bytes, chunkSize);
    const end = await sink.done;
    const seconds = (end - start) / 1000;
    return { bytes, seconds, bitsPerSecond: (bytes * 8) / seconds };
  } finally {
    sink.server.close();
  }
}

async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const addr = s.address();
  s.close();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port (probe connections carry no data). */
export async function waitListening(port: number, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const t = connect(port, '127.0.0.1');
      t.once('connect', () => {
        t.destroy();
        r(true);
      });
      t.once('error', () => r(false));
    });
    if (ok) return;
    if (performance.now() > deadline) throw new Error(`nothing listening on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The same transfer through `socat TCP-LISTEN:P,fork TCP:127.0.0.1:SINK` (needs socat installed). */
export async function socatRelayTransfer(bytes: number, chunkSize?: number): Promise<TransferResult> {
  const sink = await startSink(bytes);
  const port = await freePort();
  const socat = spawn(
    'socat',
    [`TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `TCP:127.0.0.1:${sink.port}`],
    { stdio: 'ignore' },
  );
  const killTimer = setTimeout(() => socat.kill('SIGKILL'), 120_000);
  try {
    await waitListening(port);
    const start = await sendBytes('127.0.0.1', port, bytes, chunkSize);
    const end = await sink.done;
    const seconds = (end - start) / 1000;
    return { bytes, seconds, bitsPerSecond: (bytes * 8) / seconds };
  } finally {
    clearTimeout(killTimer);
    socat.kill('SIGTERM');
    sink.server.close();
  }
}
