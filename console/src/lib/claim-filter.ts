/**
 * The Clusters page's claim filter: `key=value` (that claim with exactly that value), `key` alone (the claim is
 * there), several separated by commas or spaces (all must hold). Keys and values compare as stored.
 */
export interface ClaimTerm {
  key: string;
  /** null: any value. */
  value: string | null;
}

export function parseClaimFilter(text: string): ClaimTerm[] {
  return text
    .split(/[\s,]+/)
    .filter((t) => t !== '')
    .map((t) => {
      const i = t.indexOf('=');
      return i < 0 ? { key: t, value: null } : { key: t.slice(0, i), value: t.slice(i + 1) };
    });
}

/** Whether `claims` satisfy every term. */
export function matchesClaims(
  claims: Readonly<Record<string, string>>,
  terms: readonly ClaimTerm[],
): boolean {
  return terms.every((t) =>
    Object.hasOwn(claims, t.key) ? t.value === null || claims[t.key] === t.value : false,
  );
}
