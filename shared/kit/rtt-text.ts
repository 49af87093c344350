/** How both CLIs and the console print a round-trip time: `0.41 ms`, `2.58 ms`, `12 ms` (two decimals below 10 ms). */
export function formatRtt(ms: number): string {
  return `${ms < 10 ? ms.toFixed(2) : Math.round(ms)} ms`;
}
