/**
 * Path flips of the namespace site's direct agent. measureStalls (bench/path-flips-bench.ts): the longest pause of
 * one byte stream across many flips. measureFlips (tunnel-bench's table d): the namespace site's direct agent moves a download while its UDP goes
 * silent both ways (iptables raw PREROUTING drops on each end of the veth, so neither side's sends fail: the
 * datagrams just vanish, as behind a router that starts dropping UDP), then comes back. Fallback is the time
 * from the drop to the hub's switch away from the direct path, upgrade from the allow to its switch back,
 * both read from the hub's own switch time (`pathDetail.lastSwitch` in the cluster API), so the poll's pace
 * does not add to them.
 */
import { execFileSync } from 'node:child_process';
import type { NamespaceSite } from './netns-agents.js';
import type { Dial } from './tunnel-fixture.js';

export interface FlipTimes {
  fallbackMs: number;
  upgradeMs: number;
}

/** Drops UDP arriving at each end of the site's veth (raw PREROUTING); remove() undoes it. */
function silenceUdp(site: NamespaceSite): { remove(): void } {
  const rule = (iface: string) => ['-t', 'raw', 'PREROUTING', '-i', iface, '-p', 'udp', '-j', 'DROP'];
  const host = rule(site.ns.hostIf ?? '');
  const inside = rule(site.ns.nsIf ?? '');
  const edit = (op: '-I' | '-D', spec: string[], inNs: boolean) => {
    const [table, t, chain, ...rest] = spec;
    const args = ['-w', '5', table ?? '-t', t ?? 'raw', op, chain ?? 'PREROUTING', ...rest];
    if (inNs) execFileSync('ip', ['netns', 'exec', site.ns.name, 'iptables', ...args]);
    else execFileSync('iptables', args);
  };
  edit('-I', host, false);
  edit('-I', inside, true);
  return {
    remove() {
      edit('-D', host, false);
      edit('-D', inside, true);
    },
  };
}

/** Polls the hub's view of the direct agent until its path is `path` with a switch after `since`; the switch time. */
async function switchedTo(
  site: NamespaceSite,
  path: string,
  since: number,
  timeoutMs: number,
): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await site.directView();
    const at = v.lastSwitch === null ? Number.NaN : Date.parse(v.lastSwitch);
    if (v.path === path && at >= since) return at;
    if (Date.now() > end)
      throw new Error(`hub view not ${path} within ${timeoutMs} ms (${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `rounds` flips during a download (`saturate` starts one through the direct agent and stops it): each waits
 * for the direct path, silences UDP, waits for the fallback, allows UDP, waits for the upgrade.
 */
export async function measureFlips(
  site: NamespaceSite,
  rounds: number,
  saturate: (bulkArgs: string[]) => Promise<() => Promise<number>>,
): Promise<FlipTimes[]> {
  const times: FlipTimes[] = [];
  for (let i = 0; i < rounds; i++) {
    await switchedTo(site, 'direct', 0, 60_000);
    const stop = await saturate(site.direct.bulkArgs);
    const silenced = Date.now();
    const silence = silenceUdp(site);
    let fellAt: number;
    try {
      fellAt = await switchedTo(site, 'relayed', silenced, 30_000);
    } finally {
      silence.remove();
    }
    const allowed = Date.now();
    const upAt = await switchedTo(site, 'direct', allowed, 60_000);
    await stop();
    times.push({ fallbackMs: fellAt - silenced, upgradeMs: upAt - allowed });
  }
  return times;
}

/** The longest pause of a byte stream around one flip, and the switch it waited for. */
export interface FlipStall {
  /** 'silenced': UDP dropped both ways; 'allowed': UDP let through again. */
  flip: 'silenced' | 'allowed';
  /** Longest gap (ms) between two arrivals of the stream from the flip until the hub's switch + 2 s. */
  stallMs: number;
  /** From the flip to the hub's switch (ms). */
  switchMs: number;
  /**
   * Longest gap (ms) in a stretch of the same download as long as the flip's window, right after it, on the path
   * the flip ended on, with no flip: what the machine's own pauses give over the same time.
   */
  quietMs: number;
}

/**
 * One endless download (`GET` of 1 TiB) read in this process: the gaps between its arrivals, and whether it ended
 * or failed before stop().
 */
async function watchedDownload(dial: Dial): Promise<{
  /** Longest gap (ms) since the last call, then resets. */
  takeLongestGap(): number;
  bytes(): number;
  failure(): string | null;
  stop(): void;
}> {
  const s = await dial();
  let last = performance.now();
  let longest = 0;
  let bytes = 0;
  let failure: string | null = null;
  s.on('data', (d: Buffer) => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    bytes += d.length;
  });
  s.on('error', (e) => {
    failure ??= `error: ${e.message}`;
  });
  s.on('end', () => {
    failure ??= 'the download ended early';
  });
  s.resume();
  s.write(`GET /${1024 ** 4} HTTP/1.1\r\nHost: x\r\n\r\n`);
  return {
    takeLongestGap: () => {
      const now = performance.now();
      const g = Math.max(longest, now - last);
      longest = 0;
      return g;
    },
    bytes: () => bytes,
    failure: () => failure,
    stop: () => s.destroy(),
  };
}

type WatchedDownload = Awaited<ReturnType<typeof watchedDownload>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One flip: `flip()` changes the path, the window runs until the hub shows `path` plus 2 s; then a quiet stretch as
 * long as that window on the same path (the silenced flip's quiet stretch is relayed, UDP still dropped).
 */
async function timedFlip(
  site: NamespaceSite,
  dl: WatchedDownload,
  o: { kind: FlipStall['flip']; path: string; flip(): void; timeoutMs: number },
): Promise<FlipStall> {
  const flippedAt = Date.now();
  dl.takeLongestGap();
  o.flip();
  const switchedAt = await switchedTo(site, o.path, flippedAt, o.timeoutMs);
  await sleep(2_000);
  const stallMs = dl.takeLongestGap();
  await sleep(Date.now() - flippedAt);
  const quietMs = dl.takeLongestGap();
  return { flip: o.kind, stallMs, switchMs: switchedAt - flippedAt, quietMs };
}

/**
 * `flips` flips during one download through the direct agent (half of them silencing UDP, half allowing it
 * again): for each, the longest gap in the stream from the flip until 2 s after the hub's switch, and the longest
 * gap of a stretch as long right after it with no flip. Throws when the download fails or ends (a stream error or
 * a dropped session).
 */
export async function measureStalls(
  site: NamespaceSite,
  flips: number,
): Promise<{ stalls: FlipStall[]; bytes: number }> {
  await switchedTo(site, 'direct', 0, 60_000);
  const dl = await watchedDownload(site.direct.dial);
  const stalls: FlipStall[] = [];
  try {
    await sleep(2_000); // the download reaches its rate
    for (let i = 0; i < flips; i += 2) {
      let silence: { remove(): void } | undefined;
      const silenceUdpNow = () => {
        silence = silenceUdp(site);
      };
      const allowUdpNow = () => {
        silence?.remove();
        silence = undefined;
      };
      try {
        stalls.push(
          await timedFlip(site, dl, {
            kind: 'silenced',
            path: 'relayed',
            flip: silenceUdpNow,
            timeoutMs: 30_000,
          }),
        );
        if (i + 1 >= flips) break;
        stalls.push(
          await timedFlip(site, dl, {
            kind: 'allowed',
            path: 'direct',
            flip: allowUdpNow,
            timeoutMs: 60_000,
          }),
        );
      } finally {
        silence?.remove();
      }
      const failed = dl.failure();
      if (failed) throw new Error(`the stream failed at flip ${i + 2}: ${failed}`);
    }
    const failed = dl.failure();
    if (failed) throw new Error(`the stream failed: ${failed}`);
    return { stalls, bytes: dl.bytes() };
  } finally {
    dl.stop();
  }
}
