/** `--output json|text` and the printers both CLIs use. Data goes to stdout; progress and errors to stderr. */
import { Option } from 'commander';
import { oneOf } from './parsers.js';

export type OutputFormat = 'json' | 'text';

export function outputOption(): Option {
  return new Option('--output <format>', 'output format: json or text')
    .default('text')
    .argParser(oneOf<OutputFormat>('--output', ['json', 'text']));
}

export interface Printer {
  /** The one JSON document a data command prints (pretty, ends with a newline). */
  json(value: unknown): void;
  /** One JSON object on one line (event streams such as `serve --output json`). */
  jsonLine(value: unknown): void;
  /** Text for people, on stdout. */
  line(text: string): void;
  /** Progress and notes, on stderr. */
  note(text: string): void;
}

export function streamPrinter(
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Printer {
  return {
    json: (v) => out.write(`${JSON.stringify(v, null, 2)}\n`),
    jsonLine: (v) => out.write(`${JSON.stringify(v)}\n`),
    line: (t) => out.write(`${t}\n`),
    note: (t) => err.write(`${t}\n`),
  };
}

/** Renders rows as left-aligned columns separated by two spaces. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [fmt(header), ...rows.map(fmt)].join('\n');
}
