/**
 * iptables inside a network namespace (rules there affect only that namespace), for NAT and
 * blocked-UDP tests. Every rule we add carries a comment tag so its packet counter can be read back.
 */
import { execCommand } from './process.js';

export interface IptablesRule {
  readonly netns: string;
  readonly table: string;
  readonly chain: string;
  readonly tag: string;
  /** Packet and byte counters of this rule. */
  counters(): Promise<{ packets: number; bytes: number }>;
  /** Deletes the rule. */
  remove(): Promise<void>;
}

let tagCounter = 0;

export async function iptables(netns: string, args: readonly string[]): Promise<string> {
  return (await execCommand('iptables', ['-w', '5', ...args], { netns })).stdout;
}

/** Reads the counters of the rule tagged `tag` in `chain` (throws if no such rule). */
export async function ruleCounters(
  netns: string,
  chain: string,
  tag: string,
  table = 'filter',
): Promise<{ packets: number; bytes: number }> {
  const out = await iptables(netns, ['-t', table, '-L', chain, '-v', '-x', '-n']);
  for (const line of out.split('\n')) {
    if (!line.includes(`/* ${tag} */`)) continue;
    const m = /^\s*([0-9]+)\s+([0-9]+)\s/.exec(line);
    if (m) return { packets: Number(m[1]), bytes: Number(m[2]) };
  }
  throw new Error(`no iptables rule tagged ${tag} in ${table}/${chain} of ${netns}`);
}

/**
 * Appends (or with `insert`, prepends) `chain` rule `match... -j target` tagged with a fresh
 * comment, e.g. addRule(ns, 'OUTPUT', ['-p', 'udp'], 'DROP'); `targetArgs` follow the target (e.g.
 * `['--random-fully']` after MASQUERADE, `['--to-destination', ip]` after DNAT).
 */
export async function addRule(
  netns: string,
  chain: string,
  match: readonly string[],
  target: string,
  opts: { table?: string; insert?: boolean; tag?: string; targetArgs?: readonly string[] } = {},
): Promise<IptablesRule> {
  const table = opts.table ?? 'filter';
  const tag = opts.tag ?? `t${process.pid}-${++tagCounter}`;
  const spec = [...match, '-m', 'comment', '--comment', tag, '-j', target, ...(opts.targetArgs ?? [])];
  await iptables(netns, ['-t', table, opts.insert ? '-I' : '-A', chain, ...spec]);
  return {
    netns,
    table,
    chain,
    tag,
    counters: () => ruleCounters(netns, chain, tag, table),
    remove: async () => {
      await iptables(netns, ['-t', table, '-D', chain, ...spec]);
    },
  };
}

/** Drops every UDP packet leaving the namespace (except on lo), ahead of any existing rule. */
export async function blockUdpEgress(netns: string): Promise<IptablesRule> {
  return addRule(netns, 'OUTPUT', ['!', '-o', 'lo', '-p', 'udp'], 'DROP', { insert: true });
}

/**
 * Leaves only TCP to host:port (and replies on established connections, and lo) allowed out of
 * the namespace; everything else is dropped. Returns the allow and the final drop rules.
 */
export async function allowOnlyTcpTo(
  netns: string,
  host: string,
  port: number,
): Promise<{ allow: IptablesRule; drop: IptablesRule }> {
  await addRule(netns, 'OUTPUT', ['-o', 'lo'], 'ACCEPT');
  await addRule(netns, 'OUTPUT', ['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED'], 'ACCEPT');
  const allow = await addRule(netns, 'OUTPUT', ['-p', 'tcp', '-d', host, '--dport', String(port)], 'ACCEPT');
  const drop = await addRule(netns, 'OUTPUT', [], 'DROP');
  return { allow, drop };
}

/** Masquerades traffic leaving `outIf` (source NAT), for NAT tests with a router namespace. */
export async function masquerade(netns: string, outIf: string): Promise<IptablesRule> {
  return addRule(netns, 'POSTROUTING', ['-o', outIf], 'MASQUERADE', { table: 'nat' });
}
