/** "last seen 2m ago" for the error of a cluster whose agent is not connected. */

const STEPS: Array<[number, string]> = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];

/** `elapsedMs` as the largest whole unit: `45s`, `2m`, `3h`, `4d` (`0s` below a second or when negative). */
export function shortAge(elapsedMs: number): string {
  for (const [ms, unit] of STEPS) {
    if (elapsedMs >= ms) return `${Math.floor(elapsedMs / ms)}${unit}`;
  }
  return '0s';
}

/** `(last seen 2m ago)`, or `(never seen)` when the agent never renewed its lease. */
export function lastSeenText(lastSeenWall: number | null, nowWall: number): string {
  return lastSeenWall === null ? '(never seen)' : `(last seen ${shortAge(nowWall - lastSeenWall)} ago)`;
}
