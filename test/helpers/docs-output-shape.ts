/**
 * Whether a command's real output has the shape the docs show for it. A line's shape is its words with the values
 * masked: a word holding a digit, a `...` elision, a key or pin (`trk_`, `tpsk_`, `tin_`, `tac_`, `k_`, `sha256`) or a
 * time; in `KEY=value` only the value. A table (a header of upper-case columns two or more spaces apart) is compared by
 * its header alone, since its rows are examples. A doc line's trailing `   (note)` (three or more spaces, then a
 * parenthesis) is a note on the output, not part of it.
 */

const VALUE = /\d|\.\.\.|^(?:trk|tpsk|tin|tac|k)_|^sha256/;

function maskWord(word: string): string {
  const eq = /^([A-Z_][A-Z0-9_]*=)(.*)$/.exec(word);
  if (eq) return `${eq[1]}${maskWord(eq[2] ?? '')}`;
  return VALUE.test(word) ? '*' : word;
}

/** The shape of one output line. */
export function shapeOf(line: string): string {
  return line.trim().split(/\s+/).map(maskWord).join(' ');
}

function tableHeader(line: string): string[] | null {
  const cols = line.trim().split(/\s{2,}/);
  return cols.length >= 3 && cols.every((c) => /^[A-Z][A-Z ]*$/.test(c)) ? cols : null;
}

const isRow = (line: string) => line.trim().split(/\s{2,}/).length >= 3;

/** The doc output lines whose shape `actual` does not show (empty when the output has the documented shape). */
export function missingShapes(documented: readonly string[], actual: string): string[] {
  const actualLines = actual.split('\n');
  const actualShapes = new Set(actualLines.map(shapeOf));
  const actualHeaders = new Set(actualLines.map((l) => tableHeader(l)?.join('|')).filter(Boolean));
  const missing: string[] = [];
  let inTable = false;
  for (const raw of documented) {
    const line = raw.replace(/\s{3,}\(.*\)\s*$/, '');
    if (line.trim() === '') continue;
    const header = tableHeader(line);
    if (header) {
      inTable = true;
      if (!actualHeaders.has(header.join('|'))) missing.push(raw);
      continue;
    }
    if (inTable && isRow(line)) continue;
    inTable = false;
    if (!actualShapes.has(shapeOf(line))) missing.push(raw);
  }
  return missing;
}
