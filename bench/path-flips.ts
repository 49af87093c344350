/**
 * tunnel-bench's path flips (table e): the namespace site's direct agent moves a download while its UDP goes
 * silent both ways (iptables raw PREROUTING drops on each end of the veth, so neither side's sends fail: the
 * datagrams just vanish, as behind a router that starts dropping UDP), then comes back. Fallback is the time
 * from the drop to the hub's switch away from the direct path, upgrade from the allow to its switch back,
 * both read from the hub's own switch time (`pathDetail.lastSwitch` in the cluster API), so the poll's pace
 * does not add to them.
 */
import { execFileSync } from 'node:child_process';
import type { NamespaceSite } from './netns-agents.js';

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
