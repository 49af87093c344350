/**
 * `tunnel-relay kubeconfig NAME --merge`: writes the relay's cluster, user and context into a kubeconfig
 * file. Entries of the same name are replaced, every other entry (and comment) of the file is kept, the
 * file's current-context is set only when it has none. A new file is created 0600 (its directory 0700);
 * an existing file keeps its mode. The file is rewritten through a temporary file and a rename.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { type Document, isMap, isSeq, parseDocument } from 'yaml';
import { TunnelError } from '../../shared/errors.js';

const SECTIONS = ['clusters', 'users', 'contexts'] as const;

/** The file `kubectl` reads first: the first entry of $KUBECONFIG, else ~/.kube/config. */
export function defaultKubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const first = (env.KUBECONFIG ?? '').split(delimiter).find((p) => p.length > 0);
  return first ?? join(env.HOME || homedir(), '.kube', 'config');
}

function hasName(v: unknown): v is { name: string } {
  return typeof v === 'object' && v !== null && 'name' in v && typeof v.name === 'string';
}

function named(items: unknown, name: string): number {
  if (!isSeq(items)) return -1;
  return items.items.findIndex((it) => isMap(it) && it.get('name') === name);
}

/** Adds or replaces the entries of `add` (a kubeconfig document) in `doc`, in place. */
function mergeInto(doc: Document, add: Record<string, unknown>): void {
  if (!isMap(doc.contents)) doc.contents = doc.createNode({ apiVersion: 'v1', kind: 'Config' });
  for (const section of SECTIONS) {
    const given = add[section];
    const entries = Array.isArray(given) ? given.filter(hasName) : [];
    let seq = doc.get(section);
    if (!isSeq(seq)) {
      doc.set(section, doc.createNode([]));
      seq = doc.get(section);
    }
    if (!isSeq(seq)) continue;
    for (const entry of entries) {
      const at = named(seq, entry.name);
      if (at >= 0) seq.items[at] = doc.createNode(entry);
      else seq.items.push(doc.createNode(entry));
    }
  }
  const current = doc.get('current-context');
  if (typeof current !== 'string' || current.length === 0) doc.set('current-context', add['current-context']);
}

/** The text of `file` with `add` merged in (`existing` null: a new file). */
export function mergeKubeconfigText(
  existing: string | null,
  add: Record<string, unknown>,
  file: string,
): string {
  const doc = parseDocument(existing ?? '');
  if (doc.errors.length > 0) {
    throw new TunnelError(
      'BAD_INPUT',
      `${file} is not valid YAML (${doc.errors[0]!.message.split('\n')[0]})`,
    );
  }
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new TunnelError('BAD_INPUT', `${file} is not a kubeconfig: its top level is not a mapping`);
  }
  mergeInto(doc, add);
  return doc.toString();
}

/** Merges `add` into the kubeconfig `file` (created 0600 when missing). */
export function mergeKubeconfigFile(file: string, add: Record<string, unknown>): void {
  const exists = existsSync(file);
  const target = exists ? realpathSync(file) : file;
  const text = mergeKubeconfigText(exists ? readFileSync(target, 'utf8') : null, add, file);
  if (!exists) mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
  const mode = exists ? statSync(target).mode & 0o777 : 0o600;
  const tmp = `${target}.tunnel-relay-${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, mode);
  renameSync(tmp, target);
}
