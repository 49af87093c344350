/** Ages for people, as kubectl prints them: "45s", "3m", "2h", "5d" (whole units, rounded down). */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `ms` is a duration; a negative one (a clock ahead of ours) is shown as "0s". */
export function formatAge(ms: number): string {
  const d = Math.max(0, ms);
  if (d < MINUTE) return `${Math.floor(d / SECOND)}s`;
  if (d < HOUR) return `${Math.floor(d / MINUTE)}m`;
  if (d < 2 * DAY) return `${Math.floor(d / HOUR)}h`;
  return `${Math.floor(d / DAY)}d`;
}

/** The age of an ISO 8601 time at `nowMs`; "-" when there is none or it does not parse. */
export function ageOf(iso: string | null | undefined, nowMs: number): string {
  if (!iso) return '-';
  const at = Date.parse(iso);
  return Number.isNaN(at) ? '-' : formatAge(nowMs - at);
}
