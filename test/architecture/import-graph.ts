/**
 * The project's import graph, read from the source text: every `import ... from`, `export ... from` and
 * `import('...')` with a relative specifier, type-only imports included (a type import ties two modules as
 * much as a value import for a reader). Test support for test/architecture/dependencies.test.ts.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** Folders whose production files make up the graph (tests, bench and tools are not part of it). */
export const SOURCE_ROOTS = ['shared', 'relay', 'tunnel-client', 'console/src'] as const;

const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

function isSource(file: string): boolean {
  return /\.(ts|tsx)$/.test(file) && !/\.test\.tsx?$/.test(file) && !file.endsWith('.d.ts');
}

function walk(root: string, dir: string, out: string[]): void {
  for (const name of readdirSync(join(root, dir))) {
    if (name === 'node_modules' || name === 'dist') continue;
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) walk(root, rel, out);
    else if (isSource(rel)) out.push(rel);
  }
}

/** Every production source file under SOURCE_ROOTS, relative to `root`, with `/` separators. */
export function sourceFiles(root: string): string[] {
  const out: string[] = [];
  for (const r of SOURCE_ROOTS) walk(root, r, out);
  return out.map((f) => f.split('\\').join('/')).sort();
}

/** The relative specifiers a source text imports, in order. */
export function importSpecifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec?.startsWith('.')) found.push(spec);
  }
  return found;
}

/** The file a relative specifier of `from` names: `.js` written for a `.ts` or `.tsx` source, or a folder index. */
function resolveSpecifier(files: ReadonlySet<string>, from: string, spec: string): string | null {
  const base = normalize(join(dirname(from), spec))
    .split('\\')
    .join('/');
  const stem = base.replace(/\.(js|jsx|ts|tsx)$/, '');
  for (const c of [`${stem}.ts`, `${stem}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) {
    if (files.has(c)) return c;
  }
  return null;
}

export interface ImportEdge {
  from: string;
  to: string;
}

/** The edges file -> file among the production sources; a specifier that names no source file is left out. */
export function importEdges(root: string): ImportEdge[] {
  const files = sourceFiles(root);
  const known = new Set(files);
  const edges: ImportEdge[] = [];
  for (const from of files) {
    for (const spec of importSpecifiers(readFileSync(join(root, from), 'utf8'))) {
      const to = resolveSpecifier(known, from, spec);
      if (to !== null && to !== from) edges.push({ from, to });
    }
  }
  return edges;
}

/** The folder of a file (`relay/store/sqlite.ts` -> `relay/store`). */
export const folderOf = (file: string): string => dirname(file);

/** The strongly connected components of more than one node (Tarjan), each sorted; the cycles of the graph. */
export function cycles(nodes: Iterable<string>, edges: ReadonlyArray<ImportEdge>): string[][] {
  const next = new Map<string, Set<string>>();
  for (const n of nodes) next.set(n, new Set());
  for (const e of edges) if (e.from !== e.to) next.get(e.from)?.add(e.to);
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) connect(v);
  return found;
}

/** The folder graph's edges (one per pair of distinct folders), with one file edge behind each as evidence. */
export function folderEdges(edges: ReadonlyArray<ImportEdge>): Map<string, ImportEdge> {
  const out = new Map<string, ImportEdge>();
  for (const e of edges) {
    const from = folderOf(e.from);
    const to = folderOf(e.to);
    if (from !== to && !out.has(`${from} -> ${to}`)) out.set(`${from} -> ${to}`, e);
  }
  return out;
}

export const relativeTo = (root: string, file: string): string => relative(root, file).split('\\').join('/');
