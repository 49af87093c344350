/**
 * The reference docs name files and entry points of the code; this keeps them true. Every repository path a doc
 * names in backticks must exist, and every entry point listed in docs/LIBRARIES.md must be exported by the file
 * it is listed under.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const DOCS = [
  'README.md',
  'SECURITY.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const REPO_PATH = /^(?:relay|shared|tunnel-client|test|bench|deploy|native|console|docs|\.ci)\/[\w.\-/]*$/;

function backticked(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? '');
}

/**
 * Entry points of LIBRARIES.md: a file in backticks, a colon, then the names it exports in backticks, separated by
 * commas ("`shared/net/buffers/ring-queue.ts`: `RingQueue`, `RingQueueOptions`"). A bare file name is in the folder of the
 * file named before it.
 */
function entryPoints(markdown: string): Array<{ file: string; name: string }> {
  const found: Array<{ file: string; name: string }> = [];
  let folder = '';
  for (const match of markdown.matchAll(/`([\w./-]+\.ts)`:\s*((?:`[\w$]+`(?:,\s*)?)+)/g)) {
    const named = match[1] ?? '';
    const file = named.includes('/') ? named : join(folder, named);
    folder = join(file, '..');
    for (const name of backticked(match[2] ?? '')) found.push({ file, name });
  }
  return found;
}

function isFile(path: string): boolean {
  return existsSync(join(ROOT, path)) && statSync(join(ROOT, path)).isFile();
}

function exportsOf(file: string): Set<string> {
  const source = readFileSync(join(ROOT, file), 'utf8');
  const names = new Set<string>();
  for (const match of source.matchAll(
    /^export (?:declare )?(?:abstract )?(?:async )?(?:class|function|const|let|interface|type|enum) ([\w$]+)/gm,
  ))
    names.add(match[1] ?? '');
  for (const match of source.matchAll(/^export (?:type )?\{([^}]*)\}/gm)) {
    for (const part of (match[1] ?? '').split(',')) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop();
      if (name) names.add(name.replace(/^type\s+/, ''));
    }
  }
  return names;
}

describe('reference docs', () => {
  it('name only repository paths that exist', () => {
    const missing: string[] = [];
    for (const doc of DOCS) {
      for (const token of backticked(readFileSync(join(ROOT, doc), 'utf8'))) {
        if (REPO_PATH.test(token) && !existsSync(join(ROOT, token))) missing.push(`${doc}: ${token}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('list in LIBRARIES.md only entry points their files export', () => {
    const listed = entryPoints(readFileSync(join(ROOT, 'docs/LIBRARIES.md'), 'utf8'));
    expect(listed.length).toBeGreaterThan(40);
    const wrong = listed
      .filter(({ file, name }) => !isFile(file) || !exportsOf(file).has(name))
      .map(({ file, name }) => `${file}: ${name}`);
    expect(wrong).toEqual([]);
  });
});
