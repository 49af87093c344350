/**
 * A command line run as a user pastes it: written to the stdin of `sh` or `bash`, so the line itself is in no
 * process's argv (a `bash -c LINE` would put it in bash's). KUBECONFIG is /dev/null unless given: a kubectl in the
 * line meets no cluster of the machine's.
 */
import { spawn } from 'node:child_process';

export interface PastedRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runPasted(
  shell: 'sh' | 'bash',
  line: string,
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<PastedRun> {
  return new Promise((resolve) => {
    const child = spawn(shell, [], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '/dev/null', ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(`${line}\n`);
  });
}
