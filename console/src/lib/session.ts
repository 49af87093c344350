/**
 * The access key for this tab only: sessionStorage (gone when the tab closes, never shared with other tabs),
 * never localStorage, never a cookie or a URL.
 */
const SLOT = 'tunnel-relay-console.key';

export function savedKey(): string | null {
  try {
    return sessionStorage.getItem(SLOT);
  } catch {
    return null;
  }
}

export function saveKey(key: string): void {
  try {
    sessionStorage.setItem(SLOT, key);
  } catch {
    // storage off: the key lives in memory for this page only
  }
}

export function forgetKey(): void {
  try {
    sessionStorage.removeItem(SLOT);
  } catch {
    // nothing stored
  }
}
