/**
 * The one rule for showing untrusted strings (agent claims and versions, display names, cluster and group names,
 * reasons, audit entries, values, relay error messages): the characters a terminal acts on or a terminal or page
 * hides or reorders are written as visible escapes. That is control characters (C0, DEL, C1: ESC starts CSI and OSC
 * sequences), format characters (bidi embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069, marks
 * U+200E/U+200F/U+061C, zero-width and invisible characters, tags), line and paragraph separators and lone
 * surrogates. So "staging \u202Edorp-ton\u202C" reads as such, never as "staging not-prod".
 *
 * Both CLIs apply it to everything they print (shared/kit/cli/terminal-escape.ts, which adds the JSON form) and the web
 * console to every string it renders (console/src/lib/escape-rendered-text.ts); this module imports nothing, so the
 * console bundles it as is.
 *
 * An escape is `\u001b` (`\u{e0001}` beyond U+FFFF). Backslashes are not doubled: the aim is that nothing invisible
 * or active is shown raw, not a reversible encoding.
 */

/**
 * What must not be shown raw: Cc (C0, DEL, C1), Cf (bidi and other format), Zl, Zp, lone surrogates, and the whole
 * tag block U+E0000-U+E007F (its unassigned code points too).
 */
export const UNSAFE_CHARACTERS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u{e0000}-\u{e007f}]/gu;
/** The same, except line feed: for text of several lines (a composed command, a YAML document). */
export const UNSAFE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u{e0000}-\u{e007f}]/gu;

function hex4(unit: number): string {
  return `\\u${unit.toString(16).padStart(4, '0')}`;
}

/** `\uXXXX` for each UTF-16 unit of `ch` (the form JSON reads back). */
export function unitEscape(ch: string): string {
  let out = '';
  for (let i = 0; i < ch.length; i++) out += hex4(ch.charCodeAt(i));
  return out;
}

function codePointEscape(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  return cp > 0xffff ? `\\u{${cp.toString(16)}}` : hex4(cp);
}

/** True when `text` holds a character that escapeText() would replace. */
export function hasUnsafeCharacters(text: string): boolean {
  UNSAFE_CHARACTERS.lastIndex = 0;
  return UNSAFE_CHARACTERS.test(text);
}

/** One value: every unsafe character escaped, line feeds and tabs included. */
export function escapeText(text: string): string {
  return text.replace(UNSAFE_CHARACTERS, codePointEscape);
}

/** Text of several lines: as escapeText() but line feeds are kept. */
export function escapeLines(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, codePointEscape);
}
