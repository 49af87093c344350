/**
 * Keeps untrusted strings (agent claims and versions, display names, audit details, values keys, relay error
 * messages) from writing into the operator's terminal. Everything the CLIs print passes through here (output.ts,
 * run-cli.ts): control characters (C0, DEL, C1: ESC starts CSI and OSC sequences), format characters (bidi
 * embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069, marks U+200E/U+200F/U+061C, zero-width and
 * invisible characters, tags), line and paragraph separators and lone surrogates are written as visible escapes.
 *
 * - Text: `\u001b` (`\u{e0001}` beyond U+FFFF). Backslashes are not doubled: the aim is that nothing invisible or
 *   active reaches the terminal, not a reversible encoding.
 * - JSON: the same characters as `\uXXXX` escapes (UTF-16 units), so the document stays valid JSON and parses to
 *   exactly the value it had.
 */

/**
 * What must not reach a terminal raw: Cc (C0, DEL, C1), Cf (bidi and other format), Zl, Zp, lone surrogates, and
 * the whole tag block U+E0000-U+E007F (its unassigned code points too).
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u{e0000}-\u{e007f}]/gu;
/** The same, except line feed: for text a command composed of several lines. */
const UNSAFE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u{e0000}-\u{e007f}]/gu;

function hex4(unit: number): string {
  return `\\u${unit.toString(16).padStart(4, '0')}`;
}

function textEscape(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return cp > 0xffff ? `\\u{${cp.toString(16)}}` : hex4(cp);
}

function jsonEscape(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += hex4(ch.charCodeAt(i));
  return out;
}

/** True when `text` holds a character that escapeText() would replace. */
export function hasUnsafeCharacters(text: string): boolean {
  UNSAFE.lastIndex = 0;
  return UNSAFE.test(text);
}

/** One value for a terminal: every unsafe character escaped, line feeds and tabs included. */
export function escapeText(text: string): string {
  return text.replace(UNSAFE, textEscape);
}

/** Text a command composed (possibly several lines): as escapeText() but line feeds are kept. */
export function escapeLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, textEscape);
}

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
  return json.replace(UNSAFE_BUT_NEWLINE, jsonEscape);
}
