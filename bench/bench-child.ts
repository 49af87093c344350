/**
 * The processes of the benchmarks that start children: the relay served in a child (`<bench> --serve ...`, so its
 * CPU time is its own), the IPC question a parent asks a child, and stopping children when the run ends.
 */
import type { ChildProcess } from 'node:child_process';
import { pino } from 'pino';
import type { RelayConfig } from '../relay/ops/config/config.js';
import { startRelay } from '../relay/start/server.js';

/** In the child: starts the relay, writes one JSON line (url, caPem, adminKey) on stdout, closes on SIGTERM. */
export async function serveRelayChild(config: RelayConfig): Promise<void> {
  const relay = await startRelay(config, { logStream: pino.destination({ dest: '/dev/null', sync: false }) });
  process.stdout.write(
    `${JSON.stringify({ url: relay.url, caPem: relay.caPem, adminKey: relay.adminKey })}\n`,
  );
  process.on('SIGTERM', () => {
    void relay.close().then(() => process.exit(0));
  });
}

/** `<bench> --serve ARGS...` runs `serve(ARGS)` (the child); otherwise `main()`, exiting 1 on its error. */
export function serveOrMain(serve: (args: string[]) => Promise<void>, main: () => Promise<void>): void {
  if (process.argv[2] === '--serve') {
    void serve(process.argv.slice(3));
  } else {
    main().catch((err) => {
      console.error(err);
      process.exit(1);
    });
  }
}

/** SIGTERM, then until the child has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/**
 * How long stopChildren waits after SIGTERM: half a second, or 15 s when the children run with BENCH_NODE_ARGS
 * (a `--cpu-prof` profile is written only by a child that exits on its own, after the relay's drain).
 */
const STOP_GRACE_MS = (process.env.BENCH_NODE_ARGS ?? '').trim() === '' ? 500 : 15_000;

/** SIGTERM to the children still running, then SIGKILL to those still running after STOP_GRACE_MS. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
  const running = () => children.filter((c) => c.exitCode === null && c.signalCode === null);
  const exits = running().map((c) => new Promise((r) => c.once('exit', r)));
  for (const c of running()) c.kill('SIGTERM');
  await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, STOP_GRACE_MS))]);
  for (const c of running()) c.kill('SIGKILL');
}

/** Waits for the first IPC message carrying `key` (after sending `cmd`, if given). */
export function ask<T>(child: ChildProcess, key: string, cmd?: object): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`child exited (${code}) waiting for ${key}`));
    const on = (m: Record<string, unknown>) => {
      if (!(key in m)) return;
      child.off('message', on);
      child.off('exit', onExit);
      resolve(m[key] as T);
    };
    child.on('message', on);
    child.once('exit', onExit);
    if (cmd) child.send(cmd);
  });
}
