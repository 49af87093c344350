/**
 * Runs a commander program with the project's exit-code and error conventions:
 *   0  success (also --help, --version)
 *   1  runtime failure (relay unreachable, CA pin mismatch, cluster denied, ...)
 *   2  bad usage or bad input, with one line naming the bad value and what is valid
 * Errors print as `error CODE: message` on stderr, without a stack (set TUNNEL_DEBUG=1 for one on
 * unexpected errors). Usage errors from commander are reprinted in the same form, with commander's suggestion and a
 * pointer to the failing command's own --help. With `--output json` (or `-o json`) a failure also prints
 * {"error":{"code","message"}} on stdout.
 */
import { type Command, CommanderError } from 'commander';
import { type ErrorCode, isTunnelError } from '../../errors.js';
import { argvWantsJson } from './output-format-argv.js';
import { escapeLines, escapeText, safeJson } from './terminal-escape.js';
import { commandPath, deferRequiredOptions, UsageError, usageMessage } from './usage-error.js';

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
  const e = errorOf(err, program);
  return e ? `error ${e.code}: ${e.message}` : undefined;
}

/** The code and one-line message for `err`, or undefined when nothing should print (help, version). */
export function errorOf(err: unknown, program = 'tunnel'): { code: string; message: string } | undefined {
  if (err instanceof CommanderError) {
    if (exitCodeFor(err) === EXIT_OK || err.code === 'commander.help') return undefined;
    const path = err instanceof UsageError ? err.commandPath : program;
    return { code: 'BAD_INPUT', message: `${oneLine(usageMessage(err.message))} (see ${path} --help)` };
  }
  if (isTunnelError(err)) return { code: err.code, message: oneLine(err.message) };
  const msg = err instanceof Error ? err.message : String(err);
  return { code: 'INTERNAL', message: oneLine(msg) };
}

/** Messages quote relay answers and user input: one line, nothing a terminal would act on (terminal-escape.ts). */
function oneLine(s: string): string {
  return escapeText(s.replace(/\s*\n\s*/g, ' '));
}

function configure(cmd: Command, errWrite: (s: string) => void): void {
  cmd.exitOverride((err) => {
    throw new UsageError(err, commandPath(cmd));
  });
  deferRequiredOptions(cmd);
  cmd.configureOutput({
    writeErr: errWrite,
    // Commander's own error text is replaced by errorLine().
    outputError: () => {},
  });
  for (const sub of cmd.commands) configure(sub, errWrite);
}

export interface CliIo {
  readonly stderr?: NodeJS.WritableStream;
  readonly stdout?: NodeJS.WritableStream;
}

/** Parses argv, runs the action, and returns the exit code (the caller sets process.exitCode). */
export async function runCli(
  program: Command,
  argv: readonly string[] = process.argv,
  io: CliIo = {},
): Promise<number> {
  const stderr = io.stderr ?? process.stderr;
  const stdout = io.stdout ?? process.stdout;
  configure(program, (s) => stderr.write(s));
  try {
    await program.parseAsync(argv as string[]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (err) {
    const e = errorOf(err, program.name());
    if (e) {
      stderr.write(`error ${e.code}: ${e.message}\n`);
      // One line: a valid document for data commands, and a valid last line of serve's JSON-lines stream.
      if (argvWantsJson(argv.slice(2))) stdout.write(`${safeJson({ error: e })}\n`);
    }
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
