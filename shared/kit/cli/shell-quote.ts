/**
 * Quoting for the commands the programs print as next steps, so each is runnable as printed in a POSIX shell: a word
 * of safe characters is left as is; else, when it holds nothing double quotes would expand (`$`, backquote,
 * backslash, `!`, `"`), it is double-quoted, which reads well inside a message that quotes the whole command in
 * '...'; anything else is single-quoted (a single quote inside becomes '\'').
 */
const SAFE_WORD = /^[A-Za-z0-9@%+=:,./_-]+$/;
const DOUBLE_QUOTE_SAFE = /^[^"$`\\!]*$/;

export function shellQuote(word: string): string {
  if (SAFE_WORD.test(word)) return word;
  if (DOUBLE_QUOTE_SAFE.test(word)) return `"${word}"`;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
