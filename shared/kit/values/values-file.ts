/**
 * Agent values: the relay's merged values for this cluster (platform `agentValues` under the cluster's
 * annotation values, merged by the relay), then each `--values FILE` on top, in the order given.
 */
import { readFileSync, statSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { TunnelError } from '../../errors.js';
import { isPlainMap, layerValues, type Values } from './deep-merge.js';

/** Largest values file read. */
export const MAX_VALUES_FILE_BYTES = 1024 * 1024;
/** Most --values files. */
export const MAX_VALUES_FILES = 32;

/** Parses a YAML (or JSON) document that must be a mapping; empty means {}. */
export function parseValuesYaml(text: string, what: string): Values {
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100, logLevel: 'error' });
  } catch (err) {
    const first = (err as Error).message.split('\n')[0] ?? '';
    throw new TunnelError('BAD_INPUT', `${what} is not valid YAML: ${first}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isPlainMap(doc))
    throw new TunnelError('BAD_INPUT', `${what} must hold a YAML mapping at the top level`);
  return doc;
}

export function readValuesFile(path: string): Values {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new TunnelError('BAD_INPUT', `--values file '${path}' cannot be read (${code})`);
  }
  if (size > MAX_VALUES_FILE_BYTES) {
    throw new TunnelError(
      'BAD_INPUT',
      `--values file '${path}' is ${size} bytes; at most ${MAX_VALUES_FILE_BYTES}`,
    );
  }
  return parseValuesYaml(readFileSync(path, 'utf8'), `--values file '${path}'`);
}

/** Reads every file, in order, failing on the first bad one. */
export function readValuesFiles(paths: readonly string[]): Values[] {
  if (paths.length > MAX_VALUES_FILES) {
    throw new TunnelError('BAD_INPUT', `--values given ${paths.length} times; at most ${MAX_VALUES_FILES}`);
  }
  return paths.map(readValuesFile);
}

/** The effective values: the relay's, then the files in order. */
export function effectiveValues(fromRelay: Values, files: readonly Values[]): Values {
  return layerValues([fromRelay, ...files]);
}
