/**
 * The process's open-file limit (soft RLIMIT_NOFILE), read from /proc/self/limits on Linux. Node raises the soft
 * limit to the hard one at start, so this is what the relay can really open. null where it cannot be read.
 */
import { readFileSync } from 'node:fs';

/** The soft "Max open files" value of a /proc/<pid>/limits text; null when absent or "unlimited". */
export function parseOpenFileLimit(text: string): number | null {
  for (const line of text.split('\n')) {
    const m = /^Max open files\s+(\S+)\s+(\S+)\s+files\s*$/.exec(line);
    if (!m) continue;
    if (!/^\d{1,10}$/.test(m[1]!)) return null;
    const n = Number(m[1]);
    return n > 0 ? n : null;
  }
  return null;
}

export function readOpenFileLimit(path = '/proc/self/limits'): number | null {
  try {
    return parseOpenFileLimit(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}
