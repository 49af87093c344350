/**
 * The end-to-end part of a header list: what a proxy (the path proxy, a mesh hop) forwards. Hop-by-hop headers
 * (RFC 9110 7.6.1) belong to one connection; each caller names its own set, and the names a Connection header lists
 * are dropped with them.
 */

const NONE: ReadonlySet<string> = new Set();

/** Header names (lower case) the Connection headers of `raw` (a flat name/value list) declare hop-by-hop. */
function connectionNamed(raw: readonly string[]): Set<string> {
  const named = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') continue;
    for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
  }
  return named;
}

/**
 * `raw` (a flat name/value list) without the names in `drop` and those its Connection header names, except the
 * names in `keep` (all lower case), in order.
 */
export function endToEndHeaders(
  raw: readonly string[],
  drop: ReadonlySet<string>,
  keep: ReadonlySet<string> = NONE,
): string[] {
  const named = connectionNamed(raw);
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (!keep.has(name) && (drop.has(name) || named.has(name))) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}
