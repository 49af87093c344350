/**
 * `--output json|text` and the printers both CLIs use. Data goes to stdout; progress and errors to stderr.
 * Everything printed here is made terminal-safe (terminal-escape.ts): relay answers carry strings that agents and
 * other users chose, and none of their control or bidi characters may reach the operator's terminal raw.
 */
import type { Option } from 'commander';
import { choiceOption } from './choice-option.js';
import { escapeJsonText, escapeLines, escapeText, safeJson } from './terminal-escape.js';

export type OutputFormat = 'json' | 'text';

export function outputOption(): Option {
  return choiceOption<OutputFormat>('-o, --output <format>', 'output format', ['json', 'text']).default(
    'text',
  );
}

export interface Printer {
  /** The one JSON document a data command prints (pretty, ends with a newline). */
  json(value: unknown): void;
  /** One JSON object on one line (event streams such as `serve --output json`). */
  jsonLine(value: unknown): void;
  /** Text for people, on stdout (line feeds the command composed are kept; other control characters escaped). */
  line(text: string): void;
  /** Text for people, one printed line per entry: a line feed inside an entry is escaped too. */
  lines(texts: readonly string[]): void;
  /** Progress and notes, on stderr. */
  note(text: string): void;
}

export function streamPrinter(
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Printer {
  return {
    json: (v) => out.write(`${safeJson(v, 2)}\n`),
    jsonLine: (v) => out.write(`${safeJson(v)}\n`),
    line: (t) => out.write(`${escapeLines(t)}\n`),
    lines: (ts) => out.write(ts.map((t) => `${escapeText(t)}\n`).join('')),
    note: (t) => err.write(`${escapeLines(t)}\n`),
  };
}

/** A command's answer: with `--output json` the response as received, else what `text` prints from it. */
export function printAnswer<T>(output: OutputFormat, res: T, text: (out: Printer, res: T) => void): void {
  const out = streamPrinter();
  if (output === 'json') out.json(res);
  else text(out, res);
}

/** Renders rows as left-aligned columns separated by two spaces; each cell is escaped (one line, no controls). */
export function table(header: readonly string[], cells: readonly (readonly string[])[]): string {
  const rows = cells.map((r) => r.map(escapeText));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [fmt(header), ...rows.map(fmt)].join('\n');
}

/** A log destination (pino writes one JSON line per call) that escapes what JSON leaves raw before `dest`. */
export function jsonLogStream(dest: NodeJS.WritableStream = process.stderr): { write(line: string): void } {
  return { write: (line) => dest.write(escapeJsonText(line)) };
}
