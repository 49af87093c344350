/**
 * `--log-format pretty`: the relay's pino JSON lines rewritten for people, one line per event:
 *   `2026-11-25T14:02:03.123Z INFO  relay listening url=https://127.0.0.1:8443 caPin=sha256:...`
 * (the time in UTC as the agent writes it, the level, the message, then the other fields as key=value, objects as
 * compact JSON; an audit line's object shortened to who and from where, its message naming what). Every string
 * comes out through terminal-escape.ts, since log fields quote what agents and users sent (URLs, names, errors). A
 * line that is not a JSON object is written escaped as it came.
 */
import { escapeText } from '../../shared/kit/cli/terminal-escape.js';

const LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};

/** Fields every pino line has that the pretty line shows elsewhere or not at all. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** The time as the agent writes it too (tunnel-client/cli/context.ts): ISO 8601 in UTC, to the millisecond. */
function timeText(time: unknown): string {
  if (typeof time === 'string') return time;
  if (typeof time === 'number' && Number.isFinite(time)) return new Date(time).toISOString();
  return '----------T--:--:--.---Z';
}

/** An audit line's object in short: its message names the action and target; who did it and from where. */
function auditFields(audit: unknown): Array<[string, unknown]> {
  if (typeof audit !== 'object' || audit === null || Array.isArray(audit)) return [['audit', audit]];
  const a = audit as Record<string, unknown>;
  return (['actor', 'source'] as const).filter((k) => a[k] !== undefined).map((k) => [k, a[k]]);
}

function fieldValue(value: unknown): string {
  if (typeof value === 'string') return /[\s="]/.test(value) || value === '' ? JSON.stringify(value) : value;
  return JSON.stringify(value) ?? String(value);
}

/** One pino JSON line as the pretty line (without the line feed). */
export function prettyLine(json: string): string {
  let record: unknown;
  try {
    record = JSON.parse(json);
  } catch {
    return escapeText(json.trimEnd());
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record))
    return escapeText(json.trimEnd());
  const fields = Object.entries(record);
  const get = (k: string) => fields.find(([name]) => name === k)?.[1];
  const time = get('time');
  const level = get('level');
  const msg = get('msg');
  const head = [
    timeText(time),
    typeof level === 'number' ? (LEVELS[level] ?? `L${level}`) : 'INFO ',
    typeof msg === 'string' ? msg : '',
  ];
  const rest = fields
    .filter(([k]) => !HIDDEN.has(k))
    .flatMap(([k, v]) => (k === 'audit' ? auditFields(v) : [[k, v] as [string, unknown]]))
    .map(([k, v]) => `${k}=${fieldValue(v)}`);
  return escapeText([...head, ...rest].filter((p) => p !== '').join(' '));
}

/** A pino destination that writes each line pretty to `dest`. */
export function prettyLogStream(dest: NodeJS.WritableStream = process.stderr): { write(line: string): void } {
  return {
    write: (chunk) => {
      for (const line of chunk.split('\n')) if (line.trim() !== '') dest.write(`${prettyLine(line)}\n`);
    },
  };
}
