/**
 * How hard the abuse suite pushes. `npm test` runs every file in test/abuse/ at scale 1 (a short,
 * bounded form that still replays each attack at least once); `npm run fuzz` sets ABUSE_SCALE
 * (default there: 20) so the same files send more connections, more malformed inputs and more
 * property-test runs. A file multiplies its own counts by `abuseScale()` and keeps its time bounded.
 */
const MAX_SCALE = 200;

export function abuseScale(): number {
  const raw = process.env.ABUSE_SCALE;
  if (raw === undefined || raw === '') return 1;
  const scale = Number(raw);
  if (!Number.isInteger(scale) || scale < 1 || scale > MAX_SCALE) {
    throw new Error(`ABUSE_SCALE must be an integer from 1 to ${MAX_SCALE}, got ${JSON.stringify(raw)}`);
  }
  return scale;
}

/** fast-check run count for a property: `base` runs at scale 1, `base * scale` under `npm run fuzz`. */
export function abuseRuns(base: number): number {
  return base * abuseScale();
}
