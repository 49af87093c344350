/**
 * A user's shell for tests that run command lines as a person would: bash (or zsh) in a working directory with an
 * environment of its own, keeping the `export` lines run so far, each command in its own process group so stopping it
 * stops what it started. Every run is bounded in time; `stopAll` ends whatever is still running.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { pollUntil } from './wait.js';

export interface ShellRun {
  readonly proc: ChildProcess;
  /** stdout and stderr as they arrived. */
  out: string;
  readonly exited: Promise<number | null>;
}

export interface UserShellOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export class UserShell {
  readonly exports: string[] = [];
  readonly #running = new Set<ChildProcess>();

  constructor(private readonly o: UserShellOptions) {}

  /** Starts `command` after the exports so far, in bash, or in zsh with `shell: 'zsh'`. */
  start(command: string, opts: { shell?: 'bash' | 'zsh'; cwd?: string } = {}): ShellRun {
    const script = [...this.exports, command].join('\n');
    const file = opts.shell === 'zsh' ? '/usr/bin/zsh' : '/bin/bash';
    const proc = spawn(file, ['-c', script], {
      env: this.o.env,
      cwd: opts.cwd ?? this.o.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.#running.add(proc);
    const run: ShellRun = { proc, out: '', exited: Promise.resolve(null) };
    const add = (c: Buffer) => {
      run.out += c.toString();
    };
    proc.stdout?.on('data', add);
    proc.stderr?.on('data', add);
    Object.assign(run, {
      exited: new Promise<number | null>((r) => {
        proc.on('close', (code) => {
          this.#running.delete(proc);
          r(code);
        });
        // A shell that cannot start (not installed) ends the run at once, saying so, instead of never closing.
        proc.on('error', (err: NodeJS.ErrnoException) => {
          this.#running.delete(proc);
          run.out += `cannot start ${file}: ${err.code ?? err.message}\n`;
          r(null);
        });
      }),
    });
    return run;
  }

  /** Runs `command` to its end (killed after `ms`). */
  async run(
    command: string,
    opts: { ms?: number; shell?: 'bash' | 'zsh'; cwd?: string } = {},
  ): Promise<{ code: number | null; out: string }> {
    const r = this.start(command, opts);
    const timer = setTimeout(() => signal(r, 'SIGKILL'), opts.ms ?? 30_000);
    const code = await r.exited;
    clearTimeout(timer);
    return { code, out: r.out };
  }

  /** Waits until the output of `r` matches `pattern`; fails early when it exits. */
  async waitOutput(r: ShellRun, pattern: RegExp, ms: number, what: string): Promise<void> {
    let exited = false;
    void r.exited.then(() => {
      exited = true;
    });
    await pollUntil({
      what,
      read: () => r.out,
      until: (out) => pattern.test(out),
      timeoutMs: ms,
      intervalMs: 100,
      abort: () => (exited ? `exited while waiting for ${what}:\n${r.out}` : undefined),
    });
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves with the exit code. */
  async stop(r: ShellRun): Promise<number | null> {
    signal(r, 'SIGTERM');
    const timer = setTimeout(() => signal(r, 'SIGKILL'), 10_000);
    const code = await r.exited;
    clearTimeout(timer);
    return code;
  }

  stopAll(): void {
    for (const p of this.#running) if (p.pid !== undefined) killGroup(p.pid, 'SIGKILL');
  }
}

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

function signal(r: ShellRun, sig: NodeJS.Signals): void {
  if (r.proc.pid !== undefined && r.proc.exitCode === null) killGroup(r.proc.pid, sig);
}
