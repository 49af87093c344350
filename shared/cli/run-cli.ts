/**
 * Runs a commander program with the project's exit-code and error conventions:
 *   0  success (also --help, --version)
 *   1  runtime failure (relay unreachable, CA pin mismatch, cluster denied, ...)
 *   2  bad usage or bad input, with one line naming the bad value and what is valid
 * Errors print as `error CODE: message` on stderr, without a stack (set TUNNEL_DEBUG=1 for one on
 * unexpected errors). Usage errors from commander are reprinted in the same form.
 */
import { type Command, CommanderError } from 'commander';
import { type ErrorCode, isTunnelError } from '../errors.js';
import { escapeLines, escapeText } from './terminal-escape.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Codes that mean the caller gave a bad value: exit 2. */
const INPUT_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'BAD_INPUT',
  'BAD_CONFIG',
  'INVALID_NAME',
  'KEY_INVALID',
]);

export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? EXIT_OK : EXIT_USAGE;
  }
  if (isTunnelError(err)) return INPUT_CODES.has(err.code) ? EXIT_USAGE : EXIT_FAILURE;
  return EXIT_FAILURE;
}

/** The one line printed for `err` (no trailing newline), or undefined when nothing should print. */
export function errorLine(err: unknown, program = 'tunnel'): string | undefined {
  if (err instanceof CommanderError) {
    if (exitCodeFor(err) === EXIT_OK || err.code === 'commander.help') return undefined;
    const msg = err.message.replace(/^error:\s*/, '').split('\n')[0] ?? '';
    return `error BAD_INPUT: ${oneLine(msg)} (see ${program} --help)`;
  }
  if (isTunnelError(err)) return `error ${err.code}: ${oneLine(err.message)}`;
  const msg = err instanceof Error ? err.message : String(err);
  return `error INTERNAL: ${oneLine(msg)}`;
}

/** Messages quote relay answers and user input: one line, nothing a terminal would act on (terminal-escape.ts). */
function oneLine(s: string): string {
  return escapeText(s.replace(/\s*\n\s*/g, ' '));
}

function configure(cmd: Command, errWrite: (s: string) => void): void {
  cmd.exitOverride();
  cmd.configureOutput({
    writeErr: errWrite,
    // Commander's own error text is replaced by errorLine().
    outputError: () => {},
  });
  for (const sub of cmd.commands) configure(sub, errWrite);
}

export interface CliIo {
  readonly stderr?: NodeJS.WritableStream;
}

/** Parses argv, runs the action, and returns the exit code (the caller sets process.exitCode). */
export async function runCli(
  program: Command,
  argv: readonly string[] = process.argv,
  io: CliIo = {},
): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  configure(program, (s) => stderr.write(s));
  try {
    await program.parseAsync(argv as string[]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (err) {
    const line = errorLine(err, program.name());
    if (line) stderr.write(`${line}\n`);
    if (process.env.TUNNEL_DEBUG === '1' && !isTunnelError(err) && err instanceof Error && err.stack) {
      stderr.write(`${escapeLines(err.stack)}\n`);
    }
    return exitCodeFor(err);
  }
}

/** Entry point for a bin: runs the program, then exits with its code once stdout has drained. */
export function main(program: Command): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
  runCli(program).then(
    (code) => {
      // Flush stdout, then exit: a finished command must not linger on open handles.
      process.stdout.write('', () => process.exit(code));
    },
    (err: unknown) => {
      process.stderr.write(`${errorLine(err)}\n`);
      process.exitCode = EXIT_FAILURE;
    },
  );
}
