/**
 * Network namespaces for integration tests. createNetns() makes a namespace with lo up and, when
 * given a subnet, a veth pair to the host: host side .1, namespace side .2 of that /24 (or other
 * prefix). linkNetns() joins two namespaces directly (.1 in the first, .2 in the second).
 * Everything is registered for cleanup; destroy() kills any process still inside, then deletes
 * the namespace (which deletes its veth ends, and with them their peers).
 *
 * Subnets that touch the host must not collide with another test process running at the same
 * time: pass subnet "auto" (freeTestSubnet picks an unrouted /24 in 10.210.0.0/16), or a fixed one
 * from a test range (10.201-10.209 by convention), which is refused if already routed on the host,
 * so two suites fail loudly instead of cross-talking. Subnets between namespaces (linkNetns) never
 * reach the host and can be fixed.
 */
import { execFileSync } from 'node:child_process';
import { formatIpv4Address, parseCidr } from '../../shared/net/ip/address.js';
import { registerCleanup, runQuietSync } from './cleanup.js';
import { uniqueIfname, uniqueNetnsName } from './names.js';
import {
  type ExecResult,
  execCommand,
  type ProcessHandle,
  type SpawnOptions,
  spawnProcess,
} from './process.js';

export interface Netns {
  readonly name: string;
  /** Host-side veth name and address, when created with a subnet. */
  readonly hostIf?: string;
  readonly hostAddress?: string;
  /** Namespace-side veth name and address, when created with a subnet. */
  readonly nsIf?: string;
  readonly nsAddress?: string;
  /** Runs a command inside the namespace to completion. */
  exec(
    cmd: string,
    args: readonly string[],
    opts?: { timeoutMs?: number; input?: string },
  ): Promise<ExecResult>;
  /** Starts a tracked process inside the namespace. */
  spawn(cmd: string, args: readonly string[], opts?: Omit<SpawnOptions, 'netns'>): ProcessHandle;
  /** Kills processes inside, deletes the namespace and host link. Idempotent. */
  destroy(): Promise<void>;
}

export interface CreateNetnsOptions {
  /**
   * e.g. "10.201.7.0/24": host gets .1, the namespace .2. "auto" picks a free /24 with
   * freeTestSubnet(). Omit for no link to the host.
   */
  readonly subnet?: string;
  /** Route everything from the namespace via the host side (default false). */
  readonly defaultRoute?: boolean;
}

async function ip(args: readonly string[]): Promise<ExecResult> {
  return execCommand('ip', args);
}

function hostAddresses(subnet: string): { host: string; ns: string; len: number } {
  const c = parseCidr(subnet, true);
  if (c.prefixLength > 30) throw new Error(`subnet ${subnet} must be /30 or larger`);
  return {
    host: formatIpv4Address(c.network + 1),
    ns: formatIpv4Address(c.network + 2),
    len: c.prefixLength,
  };
}

function nsPids(name: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', name], {
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .split('\n')
      .filter((l) => /^[0-9]+$/.test(l))
      .map(Number);
  } catch {
    return [];
  }
}

function destroySync(name: string, hostIf: string | undefined): void {
  for (const pid of nsPids(name)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  runQuietSync('ip', ['netns', 'del', name]);
  if (hostIf) runQuietSync('ip', ['link', 'del', hostIf]);
}

async function subnetRouted(subnet: string): Promise<boolean> {
  return (await ip(['-4', 'route', 'show', 'root', subnet])).stdout.trim().length > 0;
}

const handedOut = new Set<string>();

/**
 * A /24 in 10.<second>.0.0/16 (default 10.210) that is not routed on the host and not already
 * handed out by this process, starting at an offset derived from the pid so concurrent test
 * processes rarely even probe the same ones. Use it for any subnet that touches the host.
 */
export async function freeTestSubnet(second = 210): Promise<string> {
  const startAt = (process.pid * 7) % 256;
  for (let i = 0; i < 256; i++) {
    const subnet = `10.${second}.${(startAt + i) % 256}.0/24`;
    if (handedOut.has(subnet) || (await subnetRouted(subnet))) continue;
    handedOut.add(subnet);
    return subnet;
  }
  throw new Error(`no free /24 left in 10.${second}.0.0/16`);
}

export async function createNetns(prefix: string, opts: CreateNetnsOptions = {}): Promise<Netns> {
  const name = uniqueNetnsName(prefix);
  const subnet = opts.subnet === 'auto' ? await freeTestSubnet() : opts.subnet;
  const addrs = subnet === undefined ? undefined : hostAddresses(subnet);
  if (subnet !== undefined && opts.subnet !== 'auto' && (await subnetRouted(subnet))) {
    throw new Error(`test subnet ${subnet} is already routed on this host; pick another or use "auto"`);
  }
  const link = addrs ? uniqueIfname('tv') : undefined;
  const hostIf = link ? `${link}h` : undefined;
  const nsIf = link ? `${link}n` : undefined;
  let destroyed = false;
  const unregister = registerCleanup({
    label: `netns ${name}`,
    async: async () => destroy(),
    sync: () => destroySync(name, hostIf),
  });
  async function destroy(): Promise<void> {
    if (destroyed) return;
    destroyed = true;
    destroySync(name, hostIf);
    unregister();
  }
  try {
    // A namespace or link with our names can only be a leftover of a killed process that had our pid.
    destroySync(name, hostIf);
    await ip(['netns', 'add', name]);
    await ip(['-n', name, 'link', 'set', 'lo', 'up']);
    if (addrs && hostIf && nsIf) {
      await ip(['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
      await ip(['link', 'set', nsIf, 'netns', name]);
      await ip(['addr', 'add', `${addrs.host}/${addrs.len}`, 'dev', hostIf]);
      await ip(['link', 'set', hostIf, 'up']);
      await ip(['-n', name, 'addr', 'add', `${addrs.ns}/${addrs.len}`, 'dev', nsIf]);
      await ip(['-n', name, 'link', 'set', nsIf, 'up']);
      if (opts.defaultRoute) await ip(['-n', name, 'route', 'add', 'default', 'via', addrs.host]);
    }
  } catch (e) {
    await destroy();
    throw e;
  }
  return {
    name,
    hostIf,
    nsIf,
    hostAddress: addrs?.host,
    nsAddress: addrs?.ns,
    exec: (cmd, args, o = {}) => execCommand(cmd, args, { ...o, netns: name }),
    spawn: (cmd, args, o = {}) => spawnProcess(cmd, args, { ...o, netns: name }),
    destroy,
  };
}

export interface NetnsLink {
  readonly aIf: string;
  readonly bIf: string;
  /** Address of `a` (.1) and `b` (.2) on the link. */
  readonly aAddress: string;
  readonly bAddress: string;
}

/** A veth pair between two namespaces: `a` gets .1 and `b` .2 of `subnet` (not routed on the host). */
export async function linkNetns(a: Netns, b: Netns, subnet: string): Promise<NetnsLink> {
  const addrs = hostAddresses(subnet);
  const base = uniqueIfname('tl');
  const aIf = `${base}a`;
  const bIf = `${base}b`;
  await ip(['link', 'add', aIf, 'netns', a.name, 'type', 'veth', 'peer', 'name', bIf, 'netns', b.name]);
  await ip(['-n', a.name, 'addr', 'add', `${addrs.host}/${addrs.len}`, 'dev', aIf]);
  await ip(['-n', b.name, 'addr', 'add', `${addrs.ns}/${addrs.len}`, 'dev', bIf]);
  await ip(['-n', a.name, 'link', 'set', aIf, 'up']);
  await ip(['-n', b.name, 'link', 'set', bIf, 'up']);
  return { aIf, bIf, aAddress: addrs.host, bAddress: addrs.ns };
}

/** Names of all namespaces on the host (for leak checks). */
export async function listNetns(): Promise<string[]> {
  const { stdout } = await ip(['netns', 'list']);
  return stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.length > 0);
}
