/**
 * Durations as users type them: `90s`, `30m`, `24h`, `7d`, or a sum of such parts (`1h30m`).
 * Used for PSK lifetimes (`pskTtl`) and access-key expiry (`expiresIn`).
 */
import { TunnelError } from '../errors.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PART = /(\d{1,7})([smhd])/gy;
/** Longest duration accepted anywhere: 366 days. */
export const MAX_DURATION_MS = 366 * UNIT_MS.d;

/** Parses `text` into milliseconds; `what` names the field in the error. Bounds: 1 s .. 366 d. */
export function parseDuration(text: string, what = 'duration'): number {
  if (typeof text !== 'string' || text.length === 0 || text.length > 32) {
    throw new TunnelError('BAD_INPUT', `${what}: expected a duration like 30m, 24h or 7d`);
  }
  PART.lastIndex = 0;
  let total = 0;
  let end = 0;
  for (let m = PART.exec(text); m !== null; m = PART.exec(text)) {
    total += Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
    end = PART.lastIndex;
  }
  if (end !== text.length) {
    throw new TunnelError('BAD_INPUT', `${what}: "${text}" is not a duration like 30m, 24h or 7d`);
  }
  if (total < UNIT_MS.s || total > MAX_DURATION_MS) {
    throw new TunnelError('BAD_INPUT', `${what}: "${text}" must be between 1s and 366d`);
  }
  return total;
}
