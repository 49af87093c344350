/**
 * Release order of two version strings as the binaries report them (`MAJOR.MINOR.PATCH`, optionally
 * `-PRERELEASE`; a leading `v` allowed). A prerelease sorts before its release; prereleases compare as
 * text. Anything else (an agent may send any short string) is `null`: not comparable.
 */
const SEMVER = /^v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:-([0-9A-Za-z.-]{1,64}))?(?:\+[0-9A-Za-z.-]{1,64})?$/;

export function compareVersions(a: string, b: string): -1 | 0 | 1 | null {
  const x = SEMVER.exec(a);
  const y = SEMVER.exec(b);
  if (!x || !y) return null;
  for (let i = 1; i <= 3; i++) {
    const d = Number(x[i]) - Number(y[i]);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  const [pa, pb] = [x[4], y[4]];
  if (pa === pb) return 0;
  if (pa === undefined) return 1;
  if (pb === undefined) return -1;
  return pa < pb ? -1 : 1;
}

/** True when `agent` is an older release than `relay`; false when newer, equal or not comparable. */
export function isOlderVersion(agent: string, relay: string): boolean {
  return compareVersions(agent, relay) === -1;
}
