/**
 * The commands the docs show, read from README.md and docs/*.md: shell words (`shellWords`), and every documented
 * `tunnel-relay` / `tunnel-client` / `npm start` command line with what the docs say it prints (`documentedCommands`).
 *
 * In a fenced block with `$ ` prompts the prompt lines are the commands and the lines up to the next prompt their
 * output (an output starting `error ` is a documented failure); in a block without prompts every line is a command.
 * Continuation lines are joined and trailing `# comments` dropped. Inline code spans count as commands when they carry
 * more than a command path (`tunnel-relay cluster get edge-1`, not `tunnel-relay serve`, which names the command).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';

export const DOC_FILES = (root: string): string[] => [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** Shell words of one command (quotes removed; `$VAR` and `$(...)` kept as written). */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let started = false;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = null;
      else cur += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      started = true;
    } else if (/\s/.test(ch)) {
      if (started || cur) words.push(cur);
      cur = '';
      started = false;
    } else cur += ch;
  }
  if (started || cur) words.push(cur);
  return words;
}

export interface DocCommand {
  /** `FILE:LINE` of the command's first line. */
  where: string;
  /** The shell line as documented (prompt, continuations and comment removed). */
  line: string;
  /** Inline code span, or a line of a fenced block. */
  inline: boolean;
  /** The output the docs show under it (prompted blocks only; empty when none). */
  output: string[];
}

/** A line that runs one of the programs: optional `VAR=value` prefixes or `eval "$(`, then the program. */
const PROGRAM =
  /^(?:[A-Z_][A-Z0-9_]*=\S+ )*(?:eval "\$\()?(?:tunnel-relay|tunnel-client|npm start)(?:\s|\)|$)/;

/** The line without a trailing `# comment` (a `# ` at the start or after white space). */
function withoutComment(line: string): string {
  return line.replace(/(^|\s)#\s.*$/, '').trim();
}

function fencedCommands(file: string, lines: string[], from: number, to: number): DocCommand[] {
  const out: DocCommand[] = [];
  const prompted = lines.slice(from, to).some((l) => l.startsWith('$ '));
  for (let i = from; i < to; i++) {
    const start = i;
    let joined = lines[i] ?? '';
    if (prompted && !joined.startsWith('$ ')) continue;
    while (/\\\s*$/.test(joined) && i + 1 < to) joined = `${joined.replace(/\\\s*$/, ' ')}${lines[++i]}`;
    const line = withoutComment(joined.replace(/^\$\s+/, '')).replace(/\s+/g, ' ');
    const output: string[] = [];
    if (prompted) for (let j = i + 1; j < to && !lines[j]?.startsWith('$ '); j++) output.push(lines[j] ?? '');
    if (PROGRAM.test(line)) out.push({ where: `${file}:${start + 1}`, line, inline: false, output });
  }
  return out;
}

/**
 * The documented commands of `file`. `isPathOnly(words)` says whether an inline span is just a command path (a name
 * like `tunnel-relay serve`), which is not a command to run.
 */
export function documentedCommands(
  root: string,
  file: string,
  isPathOnly: (words: string[]) => boolean,
): DocCommand[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const out: DocCommand[] = [];
  let fenceStart = -1;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] ?? '';
    if (/^\s*```/.test(text)) {
      if (fenceStart >= 0) out.push(...fencedCommands(file, lines, fenceStart, i));
      fenceStart = fenceStart >= 0 ? -1 : i + 1;
      continue;
    }
    if (fenceStart >= 0) continue;
    for (const m of text.matchAll(/`((?:tunnel-relay|tunnel-client|npm start) [^`]+)`/g)) {
      const line = m[1] ?? '';
      if (!isPathOnly(shellWords(line)))
        out.push({ where: `${file}:${i + 1}`, line, inline: true, output: [] });
    }
  }
  return out;
}

/** Whether `words` (a program and the words after it) name only a command of `program`'s tree, no argument or flag. */
export function namesOnlyACommand(program: Command, words: string[]): boolean {
  let cmd = program;
  for (const w of words.slice(1)) {
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (!sub) return false;
    cmd = sub;
  }
  return true;
}

/**
 * Whether `words` name a flag rather than run a command: the last word is a flag that the command does not have, or
 * one that takes a value (`tunnel-client join --ca-file`).
 */
export function namesAFlag(program: Command, words: string[]): boolean {
  const last = words.at(-1) ?? '';
  if (!last.startsWith('-')) return false;
  let cmd = program;
  for (const w of words.slice(1)) cmd = cmd.commands.find((c) => c.name() === w) ?? cmd;
  const option = cmd.options.find((o) => o.long === last || o.short === last);
  return option === undefined || option.required || option.optional;
}

/** The curl commands through the hub's CONNECT entry (`-x` / `--proxy`) that `file` shows, inline or fenced. */
export function documentedConnectCurls(root: string, file: string): DocCommand[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const out: DocCommand[] = [];
  lines.forEach((text, i) => {
    const spans = [...text.matchAll(/`(curl [^`]+)`/g)].map((m) => m[1] ?? '');
    const fenced = /^\s*(?:\$ )?curl /.test(text) ? [text.replace(/^\s*(?:\$ )?/, '')] : [];
    for (const line of [...spans, ...fenced]) {
      if (shellWords(line).some((w) => w === '-x' || w === '--proxy'))
        out.push({ where: `${file}:${i + 1}`, line, inline: spans.includes(line), output: [] });
    }
  });
  return out;
}
