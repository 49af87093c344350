/**
 * Keeps untrusted strings (agent claims and versions, display names, audit details, values keys, relay error
 * messages) from writing into the operator's terminal. Everything the CLIs print passes through here (output.ts,
 * run-cli.ts), under the one rule of shared/kit/untrusted-text.ts (which the web console applies too):
 *
 * - Text: escapeText() / escapeLines() of that module, `\u001b` (`\u{e0001}` beyond U+FFFF).
 * - JSON: the same characters as `\uXXXX` escapes (UTF-16 units), so the document stays valid JSON and parses to
 *   exactly the value it had.
 */
import { UNSAFE_BUT_NEWLINE, unitEscape } from '../untrusted-text.js';

export { escapeLines, escapeText, hasUnsafeCharacters } from '../untrusted-text.js';

/**
 * JSON text for a terminal. `value` is serialized with JSON.stringify (which already escapes C0 inside strings);
 * what JSON leaves raw (DEL, C1, format characters, U+2028/U+2029) becomes `\uXXXX`. Outside strings JSON holds
 * only printable ASCII and the indentation's line feeds, so replacing characters never changes the value.
 */
export function safeJson(value: unknown, indent?: number): string {
  return escapeJsonText(JSON.stringify(value, null, indent) ?? 'null');
}

/** JSON text (one document or JSON lines, such as pino's log lines) with the characters JSON leaves raw escaped. */
export function escapeJsonText(json: string): string {
  return json.replace(UNSAFE_BUT_NEWLINE, unitEscape);
}
