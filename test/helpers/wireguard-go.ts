/**
 * Runs the real wireguard-go inside a network namespace, configured through shared/wg-cli:
 *   ip netns exec NS env LOG_LEVEL=debug wireguard-go -f IFNAME   (log to a file)
 *   wait for /var/run/wireguard/IFNAME.sock
 *   wg set IFNAME private-key ... listen-port ... peer ...          (inside NS)
 *   ip addr add ADDRESS dev IFNAME; ip link set IFNAME mtu M up
 * Interface names are unique machine-wide (the UAPI socket directory is not per namespace).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WgDump } from '../../shared/kit/wg-cli/dump.js';
import { checkIfname, type WgPeerConfig, wgSet, wgShowDump } from '../../shared/kit/wg-cli/set.js';
import { registerCleanup } from './cleanup.js';
import { uniqueIfname } from './names.js';
import type { Netns } from './netns.js';
import { execCommand, type ProcessHandle, spawnProcess } from './process.js';
import { waitFor } from './wait.js';

export const WG_UAPI_DIR = '/var/run/wireguard';

export interface WireguardGoOptions {
  /** Default: a fresh unique name ("twg<pid>-<n>"). */
  readonly ifname?: string;
  readonly privateKey: Uint8Array;
  readonly listenPort: number;
  /** Tunnel address with prefix, e.g. "10.99.0.1/24". */
  readonly address: string;
  readonly peers?: readonly WgPeerConfig[];
  /** Default 1420. */
  readonly mtu?: number;
  /** Default "debug". */
  readonly logLevel?: 'debug' | 'verbose' | 'error' | 'silent';
  /** Safety net: SIGKILL the daemon after this long (default 10 minutes). */
  readonly timeoutMs?: number;
}

export interface WireguardGoHandle {
  readonly pid: number;
  readonly ifname: string;
  readonly netns: string;
  readonly logFile: string;
  readonly process: ProcessHandle;
  wgShow(): Promise<WgDump>;
  /** Applies more configuration (`wg set`) to the running interface. */
  set(cfg: Parameters<typeof wgSet>[1]): Promise<void>;
  readLog(): string;
  /** SIGTERM (wireguard-go removes its socket), SIGKILL after 3 s; removes a leftover socket. */
  stop(): Promise<void>;
}

export async function startWireguardGo(
  ns: Netns | string,
  opts: WireguardGoOptions,
): Promise<WireguardGoHandle> {
  const netns = typeof ns === 'string' ? ns : ns.name;
  const ifname = checkIfname(opts.ifname ?? uniqueIfname('twg'));
  const sock = join(WG_UAPI_DIR, `${ifname}.sock`);
  // A socket with our name can only be a leftover of a killed process that had our pid.
  rmSync(sock, { force: true });
  const dir = mkdtempSync(join(tmpdir(), `wggo-${ifname}-`));
  const logFile = join(dir, 'wireguard-go.log');
  const proc = spawnProcess('wireguard-go', ['-f', ifname], {
    netns,
    env: { LOG_LEVEL: opts.logLevel ?? 'debug' },
    logFile,
    timeoutMs: opts.timeoutMs ?? 600_000,
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await proc.stop(3000);
    rmSync(sock, { force: true });
    if (!process.env.KEEP_TEST_LOGS) rmSync(dir, { recursive: true, force: true });
    unregister();
  };
  const unregister = registerCleanup({
    label: `wireguard-go ${ifname}`,
    async: stop,
    sync: () => {
      rmSync(sock, { force: true });
      rmSync(dir, { recursive: true, force: true });
    },
  });
  const readLog = (): string => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const wg = { netns };
  try {
    await waitFor(
      () => {
        if (!proc.isRunning()) throw new Error(`wireguard-go exited: ${readLog().slice(-2000)}`);
        return existsSync(sock);
      },
      10_000,
      `wireguard-go UAPI socket ${sock}`,
    );
    await wgSet(
      ifname,
      { privateKey: opts.privateKey, listenPort: opts.listenPort, peers: opts.peers ?? [] },
      wg,
    );
    await execCommand('ip', ['-n', netns, 'addr', 'add', opts.address, 'dev', ifname]);
    await execCommand('ip', ['-n', netns, 'link', 'set', ifname, 'mtu', String(opts.mtu ?? 1420), 'up']);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    pid: proc.pid,
    ifname,
    netns,
    logFile,
    process: proc,
    wgShow: () => wgShowDump(ifname, wg),
    set: (cfg) => wgSet(ifname, cfg, wg),
    readLog,
    stop,
  };
}
