/**
 * Integration tests need root (CAP_NET_ADMIN for namespaces, veth, iptables), /dev/net/tun (for
 * wireguard-go) and a few binaries. When something is missing they FAIL with a message saying what
 * and how to fix it; they never skip silently (in CI, CI=true, a skip would hide a broken runner).
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export const DEFAULT_TOOLS = ['ip', 'wg', 'wireguard-go', 'iptables'] as const;

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export function hasTun(): boolean {
  try {
    accessSync('/dev/net/tun', constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds an executable on PATH (plus the sbin directories, where ip and iptables live). */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  const dirs = [...path.split(delimiter), '/usr/sbin', '/sbin'].filter((d) => d.length > 0);
  for (const d of dirs) {
    const p = join(d, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

/** Everything that stops integration tests from running here, as human-readable lines. */
export function integrationProblems(tools: readonly string[] = DEFAULT_TOOLS): string[] {
  const problems: string[] = [];
  if (!isRoot())
    problems.push('not running as root (network namespaces, veth and iptables need CAP_NET_ADMIN)');
  if (!hasTun()) problems.push('/dev/net/tun is missing or not accessible (wireguard-go needs a TUN device)');
  for (const t of tools) if (!findExecutable(t)) problems.push(`\`${t}\` is not installed`);
  return problems;
}

/**
 * Throws a clear error when the machine cannot run integration tests. Call it in beforeAll of every
 * integration suite. The message lists each problem and the fix.
 */
export function requireIntegrationPrivileges(tools: readonly string[] = DEFAULT_TOOLS): void {
  const problems = integrationProblems(tools);
  if (problems.length === 0) return;
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  throw new Error(
    `integration tests cannot run${ci ? ' in CI' : ''}:\n  - ${problems.join('\n  - ')}\n` +
      'Run them as root on Linux with /dev/net/tun, after `apt-get install wireguard-tools wireguard-go iproute2 ' +
      'iptables iputils-ping` (see .ci/run). Unit tests alone: `npx vitest run --project unit`.',
  );
}
