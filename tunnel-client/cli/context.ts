/** What the tunnel-client commands share: the state dir flag and a relay client built from saved state. */
import { Option } from 'commander';
import { choiceOption } from '../../shared/kit/cli/choice-option.js';
import { escapeLines, escapeText, safeJson } from '../../shared/kit/cli/terminal-escape.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import { trustFromFlags } from '../../shared/kit/http/trust.js';
import { AgentApi } from '../agent/api.js';
import { defaultStateDir, StateDir } from '../agent/state-dir.js';
import type { AgentState } from '../agent/types.js';

export function stateDirOption(): Option {
  return new Option(
    '--state-dir <dir>',
    'agent state directory (env TUNNEL_CLIENT_STATE_DIR, default ~/.tunnel-client)',
  );
}

export function openStateDir(flag: string | undefined): StateDir {
  return new StateDir(flag ?? defaultStateDir(), {
    onModeFixed: (fix) => stderrLog(`warning INSECURE_FILE_MODE: ${fix.message}`),
  });
}

/** A relay client for a saved registration, authenticated with the agent credential. */
export function apiFromState(stateDir: StateDir, state: AgentState): { client: RelayClient; api: AgentApi } {
  const client = new RelayClient({
    baseUrl: state.relay,
    trust: trustFromFlags({ caPin: state.caPin ?? undefined, caFile: state.caFile ?? undefined }),
  });
  return { client, api: new AgentApi(client, stateDir.readCredential()) };
}

let progressShown = false;

export type LogFormat = 'pretty' | 'json';

/** The flags every command that runs the agent (join, run) has. */
export interface AgentCommandFlags {
  stateDir?: string;
  logFormat?: LogFormat;
}
let logFormat: LogFormat = 'pretty';

/** `--log-format` of the long-running commands (join, run): pretty text lines (default) or JSON lines. */
export function logFormatOption(): Option {
  return choiceOption<LogFormat>(
    '--log-format <format>',
    'log lines on stderr: pretty (a timestamp and the text) or json ({"time","level","msg"} per line)',
    ['pretty', 'json'],
  ).env('TUNNEL_CLIENT_LOG_FORMAT');
}

/** Sets how stderrLog writes, for the rest of this process. */
export function useLogFormat(format: LogFormat | undefined): void {
  logFormat = format ?? 'pretty';
}

/**
 * Writes a log line to stderr with a timestamp (ending a progress line first, if one is shown), or with
 * `--log-format json` one JSON object. Lines quote relay answers: control and bidi characters are escaped
 * (shared/kit/cli/terminal-escape.ts), as in every CLI output.
 */
export function stderrLog(line: string): void {
  const time = new Date().toISOString();
  if (logFormat === 'json') {
    process.stderr.write(
      `${safeJson({ time, level: /^warning\b/.test(line) ? 'warn' : 'info', msg: line })}\n`,
    );
    return;
  }
  const lead = progressShown ? '\n' : '';
  progressShown = false;
  process.stderr.write(`${lead}${time} ${escapeLines(line)}\n`);
}

/** Ends a shown progress line, so what follows (an error, a result) starts on its own line. */
export function endProgress(): void {
  if (progressShown) process.stderr.write('\n');
  progressShown = false;
}

/** On a terminal, a progress writer that keeps rewriting one stderr line; elsewhere undefined. */
export function terminalProgress(): ((line: string) => void) | undefined {
  if (!process.stderr.isTTY || logFormat === 'json') return undefined;
  return (line) => {
    progressShown = true;
    process.stderr.write(`\r\x1b[K${escapeText(line)}`);
  };
}
