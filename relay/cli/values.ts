/**
 * `tunnel-relay values get|set`: agent values. Two sources: `platform-config` (the relay-wide
 * `agentValues`) and `cluster-annotation` (one cluster's values). `get NAME` without --source prints
 * what that cluster's agent receives: platform values with the cluster's deep-merged on top.
 * `set` replaces a whole document from --file, or changes single keys with --set a.b=VALUE
 * (VALUE parsed as YAML, so `3`, `true` and `[a, b]` keep their types).
 */
import { Command } from 'commander';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { TunnelError } from '../../shared/errors.js';
import { streamPrinter } from '../../shared/kit/cli/output.js';
import { collect, oneOf, parseClusterName, shown } from '../../shared/kit/cli/parsers.js';
import { isPlainMap, type Values } from '../../shared/kit/values/deep-merge.js';
import { readValuesFile } from '../../shared/kit/values/values-file.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';

type Source = 'platform-config' | 'cluster-annotation';
const sourceOpt = oneOf<Source>('--source', ['platform-config', 'cluster-annotation']);
const MAX_SET_PATH_DEPTH = 32;

function valuesPath(source: Source, name: string | undefined): string {
  if (source === 'platform-config') return '/api/v1/values';
  if (!name) throw new TunnelError('BAD_INPUT', '--source cluster-annotation needs a cluster NAME');
  return `/api/v1/clusters/${encodeURIComponent(name)}/values`;
}

/** Parses `a.b.c=VALUE` into a key path and a YAML-typed value. */
export function parseSet(expr: string): { path: string[]; value: unknown } {
  const eq = expr.indexOf('=');
  const path = eq > 0 ? expr.slice(0, eq).split('.') : [];
  if (path.length === 0 || path.length > MAX_SET_PATH_DEPTH || path.some((p) => p.length === 0)) {
    throw new TunnelError(
      'BAD_INPUT',
      `--set ${shown(expr)} is not KEY.PATH=VALUE (e.g. --set image.tag=1.2.3)`,
    );
  }
  const raw = expr.slice(eq + 1);
  let value: unknown;
  try {
    value = parseYaml(raw, { logLevel: 'error' });
  } catch {
    value = raw;
  }
  return { path, value: value === undefined ? null : value };
}

/** `doc` with `value` at `path`, creating (or replacing non-map) intermediate maps. */
export function setPath(doc: Values, path: readonly string[], value: unknown): Values {
  const [head, ...rest] = path;
  if (head === undefined) return doc;
  const out: Values = {};
  for (const k of Object.keys(doc))
    Object.defineProperty(out, k, { value: doc[k], enumerable: true, writable: true, configurable: true });
  const child = Object.hasOwn(doc, head) && isPlainMap(doc[head]) ? (doc[head] as Values) : {};
  const next = rest.length === 0 ? value : setPath(child, rest, value);
  Object.defineProperty(out, head, { value: next, enumerable: true, writable: true, configurable: true });
  return out;
}

function print(flags: AdminFlags, doc: unknown): void {
  const out = streamPrinter();
  if (flags.output === 'json') out.json(doc);
  else out.line(toYaml(doc).trimEnd());
}

export function valuesCommand(): Command {
  const values = new Command('values').description('agent values (platform-wide and per cluster)');

  values.addCommand(
    withAdminFlags(
      new Command('get')
        .description("print values: a cluster's effective values, or one source")
        .argument('[name]', 'cluster name', (v: string) => parseClusterName(v))
        .option(
          '--source <source>',
          'platform-config or cluster-annotation (default: merged for NAME)',
          sourceOpt,
        ),
    ).action(async (name: string | undefined, flags: AdminFlags & { source?: Source }) => {
      const doc = await withClient(flags, async (c) => {
        if (flags.source) return c.json<Values>('GET', valuesPath(flags.source, name));
        if (!name) throw new TunnelError('BAD_INPUT', 'give a cluster NAME, or --source platform-config');
        const text = await c.text('GET', `/clusters/${encodeURIComponent(name)}`, { accept: 'text/yaml' });
        return (parseYaml(text) ?? {}) as Values;
      });
      print(flags, doc);
    }),
  );

  values.addCommand(
    withAdminFlags(
      new Command('set')
        .description('replace values from a YAML file, or set single keys')
        .argument('[name]', 'cluster name (for cluster-annotation values)', (v: string) =>
          parseClusterName(v),
        )
        .option(
          '--source <source>',
          'platform-config or cluster-annotation (default: cluster-annotation with NAME)',
          sourceOpt,
        )
        .option('--file <file>', 'YAML mapping that replaces the whole document')
        .option('--set <key.path=value>', 'set one key (repeatable); other keys are kept', collect),
    ).action(
      async (
        name: string | undefined,
        flags: AdminFlags & { source?: Source; file?: string; set?: string[] },
      ) => {
        const source: Source = flags.source ?? (name ? 'cluster-annotation' : 'platform-config');
        const path = valuesPath(source, name);
        if (!flags.file && !flags.set)
          throw new TunnelError('BAD_INPUT', 'give --file FILE or at least one --set KEY=VALUE');
        if (flags.file && flags.set)
          throw new TunnelError('BAD_INPUT', 'give either --file or --set, not both');
        const sets = (flags.set ?? []).map(parseSet);
        const fromFile = flags.file ? readValuesFile(flags.file) : undefined;
        const doc = await withClient(flags, async (c) => {
          let next = fromFile;
          if (!next) {
            next = await c.json<Values>('GET', path);
            for (const s of sets) next = setPath(next, s.path, s.value);
          }
          return c.json<Values>('PUT', path, { body: next });
        });
        print(flags, doc);
      },
    ),
  );

  return values;
}
