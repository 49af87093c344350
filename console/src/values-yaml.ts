/**
 * Values as YAML in the browser: parse with line and column for every error, and require a map (the API's
 * values are a JSON object). Loaded on demand (the yaml library is the largest part of the console).
 */
import { parseDocument, stringify } from 'yaml';

export interface YamlProblem {
  line: number | null;
  column: number | null;
  message: string;
}

export type ParsedValues = { ok: true; value: Record<string, unknown> } | { ok: false; problems: YamlProblem[] };

export function parseValues(text: string): ParsedValues {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        line: e.linePos?.[0]?.line ?? null,
        column: e.linePos?.[0]?.col ?? null,
        message: e.message.split('\n')[0] ?? e.code,
      })),
    };
  }
  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (value === null || value === undefined) return { ok: true, value: {} };
  if (typeof value !== 'object' || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'a list' : `a ${typeof value}`;
    return { ok: false, problems: [{ line: 1, column: 1, message: `values must be a map (key: value), not ${kind}` }] };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

export function toYaml(value: unknown): string {
  if (value !== null && typeof value === 'object' && Object.keys(value).length === 0) return '{}\n';
  return stringify(value);
}
