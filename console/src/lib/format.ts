/** How times and sizes read on the page. */

/** "just now", "42 s", "5 min", "3 h", "2 d" between `iso` and `now` (ms); "-" for null. */
export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return '-';
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return '-';
  const s = Math.round(Math.abs(ms) / 1000);
  const text =
    s < 2
      ? 'now'
      : s < 90
        ? `${s} s`
        : s < 90 * 60
          ? `${Math.round(s / 60)} min`
          : s < 36 * 3600
            ? `${Math.round(s / 3600)} h`
            : `${Math.round(s / 86400)} d`;
  if (text === 'now') return 'just now';
  return ms >= 0 ? `${text} ago` : `in ${text}`;
}

/** The ISO time as the browser's local date and time, for titles and tables. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '-';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** The most recent of the given ISO times, or null. */
export function latest(...times: Array<string | null | undefined>): string | null {
  let best: string | null = null;
  for (const t of times) if (t && (best === null || Date.parse(t) > Date.parse(best))) best = t;
  return best;
}
