/**
 * Runs the wireguard-tools `wg` binary (execFile, never a shell), optionally inside a network
 * namespace via `ip netns exec NAME wg ...`. Failures become TunnelErrors:
 * - WG_CLI_MISSING: `wg` (or `ip`, for a namespace) is not installed / not on PATH;
 * - WG_CLI_FAILED: non-zero exit or timeout, quoting stderr with anything key-shaped redacted.
 */
import { execFile } from 'node:child_process';
import { TunnelError } from '../../errors.js';

export interface WgCliOptions {
  /** Run inside this network namespace (`ip netns exec NAME wg ...`). */
  readonly netns?: string;
  /** The binary to run; default "wg" looked up on PATH. */
  readonly wgPath?: string;
  /** Environment for the child (its PATH is used to find the binary). Default: process.env. */
  readonly env?: NodeJS.ProcessEnv;
  /** Default 10 s. */
  readonly timeoutMs?: number;
}

/** Caps on what we read back from `wg`: a dump of thousands of peers fits easily. */
export const WG_CLI_MAX_OUTPUT = 16 * 1024 * 1024;
const STDERR_QUOTE_MAX = 500;

const NETNS_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Replaces key-shaped tokens (base64 or hex, any run of 40+ base64-alphabet characters) and any of `secrets` with
 * "<redacted>", so stderr can be quoted in an error without leaking a key.
 */
export function redactKeys(text: string, secrets: readonly string[] = []): string {
  let out = text;
  for (const s of secrets) if (s.length >= 8) out = out.split(s).join('<redacted>');
  // Any run of 40+ base64-alphabet characters covers base64 (44) and hex (64) keys alike.
  return out.replace(/[A-Za-z0-9+/]{40,}={0,2}/g, '<redacted>');
}

export interface WgRunResult {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `wg ...args` and resolves with its output. `input` is written to stdin (for `wg pubkey`);
 * `secrets` are redacted from any error message.
 */
export function runWg(
  args: readonly string[],
  opts: WgCliOptions = {},
  io: { input?: string; secrets?: readonly string[] } = {},
): Promise<WgRunResult> {
  const wg = opts.wgPath ?? 'wg';
  let file = wg;
  let argv = [...args];
  if (opts.netns !== undefined) {
    if (!NETNS_NAME.test(opts.netns)) {
      const msg = `network namespace name ${JSON.stringify(opts.netns.slice(0, 80))} is not valid`;
      return Promise.reject(new TunnelError('BAD_INPUT', msg));
    }
    file = 'ip';
    argv = ['netns', 'exec', opts.netns, wg, ...args];
  }
  const what = `wg ${args[0] ?? ''}${opts.netns ? ` (netns ${opts.netns})` : ''}`;
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      argv,
      {
        env: opts.env ?? process.env,
        timeout: opts.timeoutMs ?? 10_000,
        maxBuffer: WG_CLI_MAX_OUTPUT,
        encoding: 'utf8',
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (!err) {
          resolve({ stdout, stderr });
          return;
        }
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
        if (e.code === 'ENOENT') {
          const bin = file === 'ip' ? '`ip` (iproute2)' : `\`${wg}\``;
          reject(
            new TunnelError('WG_CLI_MISSING', `${bin} is not installed or not on PATH (running ${what})`),
          );
          return;
        }
        // `ip netns exec` reports a missing wg as: exec of "wg" failed: No such file or directory
        if (opts.netns !== undefined && /exec of ".*" failed: No such file/.test(stderr)) {
          reject(
            new TunnelError('WG_CLI_MISSING', `\`${wg}\` is not installed or not on PATH (running ${what})`),
          );
          return;
        }
        const quoted = redactKeys(stderr.trim(), io.secrets).slice(0, STDERR_QUOTE_MAX);
        const why = e.killed
          ? `timed out after ${opts.timeoutMs ?? 10_000} ms`
          : `exited with code ${String(e.code)}`;
        reject(
          new TunnelError('WG_CLI_FAILED', `${what} ${why}${quoted ? `: ${JSON.stringify(quoted)}` : ''}`),
        );
      },
    );
    child.stdin?.on('error', () => {
      /* EPIPE when the child exits early; the exit callback reports it */
    });
    child.stdin?.end(io.input ?? '');
  });
}
