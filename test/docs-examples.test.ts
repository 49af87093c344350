/**
 * Every `tunnel-relay` / `tunnel-client` command in the docs' examples parses with the real command tree: the fenced
 * code blocks of README.md and docs/*.md are read, each command line (continuations joined, `VAR=value` prefixes and
 * comments taken off, pipes and `&&` split; `npm start -- ...` is `tunnel-relay serve ...`) is parsed by the programs'
 * own commander trees with every action replaced by nothing. An unknown command or flag, a missing flag value or a
 * missing argument fails the test, naming the file and line. Values are not judged: the docs write placeholders
 * (`sha256:...`, `NAME`), and a lone `...` stands for more flags. A line followed by `error ...` shows a
 * mistake on purpose and is skipped, as are synopsis lines (with `[...]` optional parts). curl examples of the
 * hub's CONNECT entry (fenced, or inline code) must tunnel (`-p`) and say how the relay's certificate is trusted
 * (`--proxy-insecure` or `--proxy-cacert`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildRelayProgram } from '../relay/cli/program.js';
import { buildClientProgram } from '../tunnel-client/cli/program.js';
import { ROOT } from './cli-harness.js';
import { DOC_FILES, shellWords } from './helpers/docs-commands.js';

interface Example {
  where: string;
  words: string[];
  env: Record<string, string>;
}

const FILES = DOC_FILES(ROOT);

/** The commands of one (joined) code line that run tunnel-relay or tunnel-client. */
function commandsOf(line: string, where: string): Example[] {
  const noComment = line.replace(/(^|\s)#.*$/, '');
  const out: Example[] = [];
  for (const part of noComment.split(/\s*(?:\|\||&&|\||;)\s*/)) {
    let words = shellWords(part.replace(/^\$\s+/, '').trim());
    const env: Record<string, string> = {};
    while (words[0] && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
      const [k, ...v] = words[0].split('=');
      env[k ?? ''] = v.join('=');
      words = words.slice(1);
    }
    if (words[0] === 'npx') words = words.slice(1);
    if (words[0] === 'npm' && words[1] === 'start' && (words.length === 2 || words[2] === '--'))
      words = ['tunnel-relay', 'serve', ...words.slice(3)];
    if (words[0] !== 'tunnel-relay' && words[0] !== 'tunnel-client') continue;
    words = words.filter((w) => w !== '...'); // "more flags here"
    if (words.some((w) => w.startsWith('[') || w.includes('...]') || w === '|')) continue; // a synopsis
    out.push({ where, words, env });
  }
  return out;
}

function examplesIn(file: string): { commands: Example[]; curls: Example[] } {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const commands: Example[] = [];
  const curls: Example[] = [];
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] ?? '';
    if (/^\s*```/.test(text)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) {
      // Inline code spans: curl examples only.
      for (const m of text.matchAll(/`(curl [^`]+)`/g))
        curls.push({ where: `${file}:${i + 1}`, words: shellWords(m[1] ?? ''), env: {} });
      continue;
    }
    let joined = text;
    const start = i;
    while (/\\\s*$/.test(joined) && i + 1 < lines.length)
      joined = `${joined.replace(/\\\s*$/, ' ')}${lines[++i]}`;
    const where = `${file}:${start + 1}`;
    // A documented mistake: the command is followed by the error it gets.
    if (/^error /.test(lines[i + 1] ?? '')) continue;
    commands.push(...commandsOf(joined, where));
    if (/(^|\s)curl\s/.test(joined)) curls.push({ where, words: shellWords(joined), env: {} });
  }
  return { commands, curls };
}

function quiet(cmd: Command): void {
  cmd.exitOverride();
  cmd.configureOutput({ writeOut: () => {}, writeErr: () => {} });
  cmd.action(() => {});
  for (const sub of cmd.commands) quiet(sub);
}

/** Errors that say the command line itself is wrong (not a placeholder value). */
const SHAPE_ERRORS = new Set([
  'commander.unknownCommand',
  'commander.unknownOption',
  'commander.excessArguments',
  'commander.missingArgument',
  'commander.optionMissingArgument',
  'commander.missingMandatoryOptionValue',
  'commander.conflictingOption',
]);

/** Why `ex` does not parse, or null when it does. */
function shapeError(ex: Example): string | null {
  const program = ex.words[0] === 'tunnel-relay' ? buildRelayProgram() : buildClientProgram();
  quiet(program);
  const saved = { ...process.env };
  Object.assign(process.env, ex.env);
  try {
    program.parse(ex.words.slice(1), { from: 'user' });
    return null;
  } catch (err) {
    if (err instanceof CommanderError) return SHAPE_ERRORS.has(err.code) ? err.message : null;
    return null; // a value parser refused a placeholder
  } finally {
    for (const k of Object.keys(ex.env)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

const all = FILES.map(examplesIn);
const commands = all.flatMap((e) => e.commands);
const curls = all.flatMap((e) => e.curls);

describe("the docs' examples", () => {
  it('find the commands (the extraction works)', () => {
    expect(commands.length).toBeGreaterThan(20);
    expect(commands.some((c) => c.words[0] === 'tunnel-client')).toBe(true);
  });

  it('every tunnel-relay / tunnel-client command parses: no unknown command or flag, nothing missing', () => {
    const failures = commands.flatMap((ex) => {
      const why = shapeError(ex);
      return why === null ? [] : [`${ex.where}: ${ex.words.join(' ')}\n    ${why}`];
    });
    expect(failures).toEqual([]);
  });

  it('a misspelt flag or command is caught (the check can fail)', () => {
    const bad = [
      ['tunnel-relay', 'cluster', 'create', 'x', '--gruop', 'g'],
      ['tunnel-client', 'jion'],
    ];
    for (const words of bad) expect(shapeError({ where: 'test', words, env: {} })).not.toBeNull();
  });

  it('curl through the CONNECT entry tunnels (-p) and trusts the relay certificate explicitly', () => {
    const connect = curls.filter((c) => c.words.some((w) => /^(--proxy|-x)$/.test(w)));
    expect(connect.length).toBeGreaterThan(0);
    const failures = connect.flatMap((c) => {
      const ok =
        c.words.some((w) => w === '-p' || w === '--proxytunnel') &&
        c.words.some((w) => w === '--proxy-insecure' || w === '--proxy-cacert');
      return ok ? [] : [`${c.where}: ${c.words.join(' ')}`];
    });
    expect(failures).toEqual([]);
  });
});
