/**
 * Child processes for integration tests: tracked in the cleanup registry, spawned in their own
 * process group (so `ip netns exec` and anything they start die together), killed on timeout.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { killGroupSync, registerCleanup } from './cleanup.js';

export interface SpawnOptions {
  /** Run inside this network namespace (`ip netns exec NS cmd ...`). */
  readonly netns?: string;
  /** Added to process.env. */
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  /** Write stdout+stderr to this file instead of keeping them in memory. */
  readonly logFile?: string;
  /** SIGKILL the process after this long (default 120 s): no test leaves a process running. */
  readonly timeoutMs?: number;
}

export interface ProcessHandle {
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 64 KiB of stdout+stderr (empty when logFile is used). */
  output(): string;
  isRunning(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs` (default 3 s); resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_KEEP = 64 * 1024;

export function spawnProcess(cmd: string, args: readonly string[], opts: SpawnOptions = {}): ProcessHandle {
  const file = opts.netns === undefined ? cmd : 'ip';
  const argv = opts.netns === undefined ? [...args] : ['netns', 'exec', opts.netns, cmd, ...args];
  const logFd = opts.logFile === undefined ? undefined : openSync(opts.logFile, 'a', 0o600);
  const child = spawn(file, argv, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    detached: true,
    stdio: ['ignore', logFd ?? 'pipe', logFd ?? 'pipe'],
  });
  if (logFd !== undefined) closeSync(logFd);
  let out = '';
  const keep = (d: Buffer): void => {
    out = (out + d.toString('utf8')).slice(-OUTPUT_KEEP);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      running = false;
      // Resolve once stdout/stderr are drained ('close'), so output() holds the last lines; give up
      // waiting after 200 ms in case a stray grandchild keeps the pipes open.
      const done = (): void => resolve({ code, signal });
      const t = setTimeout(done, 200);
      child.once('close', () => {
        clearTimeout(t);
        done();
      });
    });
    child.on('error', (err) => {
      running = false;
      keep(Buffer.from(`spawn error: ${err.message}\n`));
      resolve({ code: null, signal: null });
    });
  });
  const pid = child.pid ?? -1;
  const timer = setTimeout(() => {
    if (running && pid > 0) killGroupSync(pid);
  }, opts.timeoutMs ?? 120_000);
  timer.unref();

  const stop = async (graceMs = 3000): Promise<void> => {
    clearTimeout(timer);
    if (running && pid > 0) {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // gone
      }
      const t = setTimeout(() => {
        if (running) killGroupSync(pid);
      }, graceMs);
      await exited;
      clearTimeout(t);
    }
    unregister();
  };
  const unregister = registerCleanup({
    label: `process ${pid} (${cmd})`,
    async: () => stop(),
    sync: () => {
      if (running && pid > 0) killGroupSync(pid);
    },
  });
  exited.then(() => clearTimeout(timer));
  return { pid, child, exited, output: () => out, isRunning: () => running, stop };
}

export interface ExecResult {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion (no shell); rejects with its stderr on failure or timeout. */
export function execCommand(
  cmd: string,
  args: readonly string[],
  opts: { netns?: string; timeoutMs?: number; env?: Record<string, string>; input?: string } = {},
): Promise<ExecResult> {
  const file = opts.netns === undefined ? cmd : 'ip';
  const argv = opts.netns === undefined ? [...args] : ['netns', 'exec', opts.netns, cmd, ...args];
  return new Promise((resolve, reject) => {
    const c = execFile(
      file,
      argv,
      {
        timeout: opts.timeoutMs ?? 20_000,
        env: { ...process.env, ...opts.env },
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout, stderr) => {
        if (err) {
          const tail = (t: string): string => t.trim().slice(-2000);
          const why = err.killed ? `killed after ${opts.timeoutMs ?? 20_000} ms` : `exit ${String(err.code)}`;
          const e = new Error(
            `${[file, ...argv].join(' ')} failed (${why}); stderr: ${tail(stderr)}; stdout: ${tail(stdout)}`,
          );
          reject(Object.assign(e, { stdout, stderr }));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
    c.stdin?.on('error', () => {});
    c.stdin?.end(opts.input ?? '');
  });
}

/** True while a process with this pid exists (signal 0 probe). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
