/**
 * Values as YAML in the browser: parse with line and column for every error, and require a map (the API's
 * values are a JSON object). Loaded on demand (the yaml library is the largest part of the console).
 */
import { LineCounter, parseDocument, stringify } from 'yaml';

export interface YamlProblem {
  line: number | null;
  column: number | null;
  message: string;
}

export type ParsedValues =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; problems: YamlProblem[] };

export function parseValues(text: string): ParsedValues {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter: lines });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => {
        const at = lines.linePos(e.pos[0]);
        return { line: at.line, column: at.col, message: e.message.split('\n')[0] ?? e.code };
      }),
    };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // An alias without its anchor, or aliases that would expand past the count.
    return { ok: false, problems: [{ line: null, column: null, message: (err as Error).message }] };
  }
  if (value === null || value === undefined) return { ok: true, value: {} };
  if (typeof value !== 'object' || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'a list' : `a ${typeof value}`;
    return {
      ok: false,
      problems: [{ line: 1, column: 1, message: `values must be a map (key: value), not ${kind}` }],
    };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

export function toYaml(value: unknown): string {
  if (value !== null && typeof value === 'object' && Object.keys(value).length === 0) return '{}\n';
  return stringify(value);
}
