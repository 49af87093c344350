/** Kubernetes names for clusters: DNS-1123 labels (the rule relay/control/model/names.ts enforces), made from a display name. */
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const MAX_NAME = 63;

export function isDns1123Label(name: string): boolean {
  return LABEL.test(name);
}

/** Why `name` is not a DNS-1123 label, or null when it is. */
export function nameProblem(name: string): string | null {
  if (name === '') return 'required';
  if (name.length > MAX_NAME) return `${name.length} characters: at most ${MAX_NAME}`;
  const bad = /[^-a-z0-9]/.exec(name);
  if (bad) return `"${bad[0]}" is not allowed: use a-z, 0-9 and '-'`;
  if (!/^[a-z0-9]/.test(name)) return 'must start with a letter or digit';
  if (!/[a-z0-9]$/.test(name)) return 'must end with a letter or digit';
  return null;
}

/**
 * A DNS-1123 label from a display name: lower case, accents dropped, every run of other characters one '-',
 * cut to 63; `cluster` when nothing is left. When the result is in `taken`, `-2`, `-3`, ... is appended.
 */
export function nameFromDisplayName(display: string, taken: ReadonlySet<string> = new Set()): string {
  const base =
    display
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+/, '')
      .slice(0, MAX_NAME)
      .replace(/-+$/, '') || 'cluster';
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = `${base.slice(0, MAX_NAME - suffix.length).replace(/-+$/, '')}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}
