/**
 * Parser for `wg show <iface> dump`: tab-separated, one interface line then one line per peer.
 *
 *   interface: private-key  public-key  listen-port  fwmark
 *   peer:      public-key  preshared-key  endpoint  allowed-ips  latest-handshake  rx-bytes  tx-bytes  persistent-keepalive
 *
 * "(none)" marks an unset key, endpoint or allowed-ips; "off" an unset fwmark or keepalive;
 * latest-handshake is Unix seconds (0 = never). Private and preshared keys are NOT kept in the
 * parsed result (only whether they are set), so a dump can be logged or asserted on safely.
 */
import { TunnelError } from '../../errors.js';
import { parseKey } from '../../keys.js';

/** At most this many peer lines are accepted (wireguard-go holds far fewer in our use). */
export const WG_DUMP_MAX_PEERS = 65_536;
export const WG_DUMP_MAX_ALLOWED_IPS = 4_096;

export interface WgDumpInterface {
  readonly hasPrivateKey: boolean;
  /** Base64, or null when no private key is set. */
  readonly publicKey: string | null;
  readonly listenPort: number;
  /** null when off. */
  readonly fwmark: number | null;
}

export interface WgDumpPeer {
  readonly publicKey: string;
  readonly hasPresharedKey: boolean;
  /** "ip:port" or "[v6]:port", null when unknown. */
  readonly endpoint: string | null;
  readonly allowedIps: readonly string[];
  /** Unix seconds of the last handshake, 0 = never. */
  readonly latestHandshake: number;
  readonly rxBytes: number;
  readonly txBytes: number;
  /** Seconds; null when off. */
  readonly persistentKeepalive: number | null;
}

export interface WgDump {
  readonly iface: WgDumpInterface;
  readonly peers: readonly WgDumpPeer[];
}

function bad(line: number, why: string): TunnelError {
  return new TunnelError('WG_CLI_FAILED', `unexpected \`wg show dump\` output, line ${line}: ${why}`);
}

function num(s: string, line: number, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^[0-9]{1,16}$/.test(s) || Number(s) > max) throw bad(line, `${what} is not a number`);
  return Number(s);
}

function key(s: string, line: number, what: string): string {
  try {
    parseKey(s);
  } catch {
    throw bad(line, `${what} is not a key`);
  }
  return s;
}

/** fwmark prints as "off" or a hex "0x..." value. */
function fwmark(s: string, line: number): number | null {
  if (s === 'off') return null;
  if (/^0x[0-9a-fA-F]{1,8}$/.test(s)) return Number.parseInt(s.slice(2), 16);
  return num(s, line, 'fwmark', 0xffff_ffff);
}

export function parseWgDump(text: string): WgDump {
  const lines = text.split('\n').filter((l) => l.length > 0);
  const first = lines[0];
  if (first === undefined) throw bad(1, 'no interface line');
  if (lines.length - 1 > WG_DUMP_MAX_PEERS) throw bad(lines.length, `more than ${WG_DUMP_MAX_PEERS} peers`);
  const f = first.split('\t');
  if (f.length !== 4) throw bad(1, `interface line has ${f.length} fields, expected 4`);
  const hasPrivateKey = f[0] !== '(none)';
  if (hasPrivateKey) key(f[0]!, 1, 'private key');
  const iface: WgDumpInterface = {
    hasPrivateKey,
    publicKey: f[1] === '(none)' ? null : key(f[1]!, 1, 'public key'),
    listenPort: num(f[2]!, 1, 'listen port', 0xffff),
    fwmark: fwmark(f[3]!, 1),
  };
  const peers: WgDumpPeer[] = [];
  for (let i = 1; i < lines.length; i++) {
    const n = i + 1;
    const p = lines[i]!.split('\t');
    if (p.length !== 8) throw bad(n, `peer line has ${p.length} fields, expected 8`);
    const hasPresharedKey = p[1] !== '(none)';
    if (hasPresharedKey) key(p[1]!, n, 'preshared key');
    const ips = p[3] === '(none)' ? [] : p[3]!.split(',');
    if (ips.length > WG_DUMP_MAX_ALLOWED_IPS) throw bad(n, 'too many allowed IPs');
    if (ips.some((c) => !/^[0-9a-fA-F.:]+\/[0-9]{1,3}$/.test(c)))
      throw bad(n, 'allowed-ips is not a CIDR list');
    if (p[2] !== '(none)' && !/^(\[[0-9a-fA-F:.%a-z]+\]|[0-9.]+):[0-9]{1,5}$/.test(p[2]!)) {
      throw bad(n, 'endpoint is not ip:port');
    }
    peers.push({
      publicKey: key(p[0]!, n, 'peer public key'),
      hasPresharedKey,
      endpoint: p[2] === '(none)' ? null : p[2]!,
      allowedIps: ips,
      latestHandshake: num(p[4]!, n, 'latest handshake'),
      rxBytes: num(p[5]!, n, 'rx bytes'),
      txBytes: num(p[6]!, n, 'tx bytes'),
      persistentKeepalive: p[7] === 'off' ? null : num(p[7]!, n, 'persistent keepalive', 0xffff),
    });
  }
  return { iface, peers };
}
