/**
 * `wg show <iface> dump` and `wg set <iface> ...` as typed calls. Private and preshared keys go
 * through 0600 temporary files (wg reads them only from files), never through argv.
 */
import { TunnelError } from '../../errors.js';
import { keyToBase64 } from '../../keys.js';
import { parseCidr } from '../../net/ip/address.js';
import { parseWgDump, type WgDump } from './dump.js';
import { withKeyFile } from './key-file.js';
import { runWg, type WgCliOptions } from './run.js';

export interface WgPeerConfig {
  readonly publicKey: Uint8Array;
  /** Remove this peer (other fields are ignored). */
  readonly remove?: boolean;
  readonly presharedKey?: Uint8Array;
  /** "ip:port" or "[v6]:port". */
  readonly endpoint?: string;
  /** CIDRs; replaces the peer's allowed IPs. An empty list clears them. */
  readonly allowedIps?: readonly string[];
  /** Seconds, 0 = off. */
  readonly persistentKeepalive?: number;
}

export interface WgSetConfig {
  readonly privateKey?: Uint8Array;
  readonly listenPort?: number;
  readonly fwmark?: number;
  readonly peers?: readonly WgPeerConfig[];
}

/** Linux interface names: 1-15 characters, no slash, whitespace or leading dash. */
const IFNAME = /^[A-Za-z0-9_.=+][A-Za-z0-9_.=+-]{0,14}$/;
const ENDPOINT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/;
const V6_CIDR = /^[0-9a-fA-F:]+(\/[0-9]{1,3})?$/;

export function checkIfname(ifname: string): string {
  if (!IFNAME.test(ifname)) {
    throw new TunnelError(
      'BAD_INPUT',
      `interface name ${JSON.stringify(ifname.slice(0, 32))} is not valid (1-15 of A-Za-z0-9_.=+-)`,
    );
  }
  return ifname;
}

function intIn(v: number, lo: number, hi: number, what: string): string {
  if (!Number.isInteger(v) || v < lo || v > hi)
    throw new TunnelError('BAD_INPUT', `${what} must be ${lo}-${hi}, got ${v}`);
  return String(v);
}

function allowedIpsArg(list: readonly string[]): string {
  for (const c of list) {
    if (c.includes(':')) {
      if (!V6_CIDR.test(c))
        throw new TunnelError('BAD_INPUT', `allowed IP ${JSON.stringify(c)} is not a CIDR`);
    } else {
      parseCidr(c);
    }
  }
  return list.join(',');
}

export async function wgShowDump(ifname: string, opts: WgCliOptions = {}): Promise<WgDump> {
  const { stdout } = await runWg(['show', checkIfname(ifname), 'dump'], opts);
  return parseWgDump(stdout);
}

/** Builds the argv of `wg set`, given the paths of already-written key files. Exported for tests. */
export function wgSetArgs(
  ifname: string,
  cfg: WgSetConfig,
  files: { privateKey?: string; psks: readonly (string | undefined)[] },
): string[] {
  const args = ['set', checkIfname(ifname)];
  if (files.privateKey !== undefined) args.push('private-key', files.privateKey);
  if (cfg.listenPort !== undefined) args.push('listen-port', intIn(cfg.listenPort, 0, 65535, 'listen port'));
  if (cfg.fwmark !== undefined) args.push('fwmark', intIn(cfg.fwmark, 0, 0xffff_ffff, 'fwmark'));
  (cfg.peers ?? []).forEach((p, i) => {
    args.push('peer', keyToBase64(p.publicKey));
    if (p.remove) {
      args.push('remove');
      return;
    }
    const psk = files.psks[i];
    if (psk !== undefined) args.push('preshared-key', psk);
    if (p.endpoint !== undefined) {
      if (!ENDPOINT.test(p.endpoint)) {
        throw new TunnelError(
          'BAD_INPUT',
          `endpoint ${JSON.stringify(p.endpoint.slice(0, 80))} is not host:port`,
        );
      }
      args.push('endpoint', p.endpoint);
    }
    if (p.persistentKeepalive !== undefined) {
      args.push('persistent-keepalive', intIn(p.persistentKeepalive, 0, 65535, 'persistent keepalive'));
    }
    if (p.allowedIps !== undefined) args.push('allowed-ips', allowedIpsArg(p.allowedIps));
  });
  return args;
}

/** Applies `cfg` with one `wg set` call. Secrets never appear in argv or in error messages. */
export async function wgSet(ifname: string, cfg: WgSetConfig, opts: WgCliOptions = {}): Promise<void> {
  const peers = cfg.peers ?? [];
  const secrets = [cfg.privateKey, ...peers.map((p) => p.presharedKey)]
    .filter((k): k is Uint8Array => k !== undefined)
    .map((k) => keyToBase64(k));
  // Validate everything before touching the filesystem or running anything.
  wgSetArgs(ifname, cfg, { privateKey: cfg.privateKey ? '-' : undefined, psks: peers.map(() => undefined) });

  const psks: (string | undefined)[] = [];
  const run = async (privateKeyPath: string | undefined): Promise<void> => {
    await runWg(wgSetArgs(ifname, cfg, { privateKey: privateKeyPath, psks }), opts, { secrets });
  };
  // Nest withKeyFile for each preshared key, then the private key.
  const withPsks = async (i: number): Promise<void> => {
    if (i === peers.length) {
      if (cfg.privateKey) await withKeyFile(cfg.privateKey, run);
      else await run(undefined);
      return;
    }
    const psk = peers[i]!.remove ? undefined : peers[i]!.presharedKey;
    if (psk === undefined) {
      psks[i] = undefined;
      await withPsks(i + 1);
      return;
    }
    await withKeyFile(psk, async (path) => {
      psks[i] = path;
      await withPsks(i + 1);
    });
  };
  await withPsks(0);
}
