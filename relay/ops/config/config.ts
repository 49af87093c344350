/**
 * Relay configuration: defaults < YAML config file < TUNNEL_RELAY_* environment < command-line flags.
 * Config-file keys mirror the flags (`public-url` or `publicUrl`); unknown keys are refused so a
 * typo cannot silently fall back to a default. Every invalid value fails fast with BAD_CONFIG naming
 * the key, where it came from, and what would be valid.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TunnelError } from '../../../shared/errors.js';
import { type ControlLimits, parseControlLimits } from './config-control-limits.js';
import { checkRelayMode, parseMode, type RelayMode } from './config-mode.js';
import { parseProxyProtocol, type TrustedCidr } from './config-proxy-protocol.js';
import { parseStoreSettings, type StoreConfig } from './config-store.js';
import {
  DEFAULT_BODY_TIMEOUT_S,
  DEFAULT_HEADER_TIMEOUT_S,
  DEFAULT_IDLE_TIMEOUT_S,
  DEFAULT_MAX_PENDING_PER_SOURCE,
  type HttpLimits,
  MIN_MAX_CONNECTIONS,
  TIMEOUT_RANGE_S,
} from './http-limits.js';
import { filePath, type MeshConfig, parseMeshSettings } from './mesh-settings.js';

import { parseUdpPublicEndpoint } from './public-endpoint.js';
import { parseStunServers } from './stun-servers.js';

export type { StoreConfig } from './config-store.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** How log lines are written: `pretty` for people, `json` (one pino object per line) for machines. */
export type LogFormat = 'json' | 'pretty';
const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

export interface RelayConfig {
  /** hub (default): the whole relay; relay: a forwarding-only replica with no hub key (config-mode.ts). */
  mode: RelayMode;
  /** Address the TLS port binds to. Port 0 picks a free port (tests). */
  listen: { host: string; port: number };
  /**
   * `--metrics-listen`: a plain-HTTP address that serves /metrics alone, which the main port then no longer
   * serves; null = /metrics on the main port (unauthenticated, like /healthz and /readyz).
   */
  metricsListen: { host: string; port: number } | null;
  /** URL agents and tools use to reach the relay; null = derived from the bound address at start. */
  publicUrl: string | null;
  dataDir: string;
  store: StoreConfig;
  /** Given certificate and key files (PEM); null = self-signed certificate in the data dir. */
  tlsCert: string | null;
  tlsKey: string | null;
  /** Direct WireGuard UDP port; null = off. */
  udpPort: number | null;
  /** `host:port` agents use for the UDP port; null = the public URL's host and the bound port. */
  udpPublicEndpoint: string | null;
  /** STUN responder port; null = off. */
  stunPort: number | null;
  /** `host:port` of STUN servers the hub asks for its own mapped UDP address (`--stun-server`); empty = none. */
  stunServers: readonly string[];
  logLevel: LogLevel;
  /** `--log-format`; null: pretty when stderr is a terminal, else json. */
  logFormat: LogFormat | null;
  /** Lease duration handed to agents (they renew this often, with jitter). */
  leaseDurationSeconds: number;
  /**
   * Serve plain HTTP on `listen` (TLS is terminated in front, by a load balancer); `publicUrl` is then
   * required and https://, and tlsCert/tlsKey must be null.
   */
  plainHttp: boolean;
  /** PEM file of the CA that signed the terminator's certificate (plain-http only); null = system trust. */
  publicCaFile: string | null;
  /** /derp connections in the handshake at once (relay/data/derp/limits.ts `maxHandshaking`). */
  derpMaxHandshakes: number;
  /** HTTP connection limits; `maxConnections` null = derived from the open-file limit at start. */
  http: HttpLimitsConfig;
  /** The hub's WireGuard private key file shared by a fleet of replicas; null = <dataDir>/hub.key. */
  hubKeyFile: string | null;
  /** Replica mesh (relay/fleet/mesh/): off unless --mesh-key-file is given with a postgres:// store. */
  mesh: MeshConfig;
  /** SIGTERM: how long in-flight hub requests may run before the relay exits. */
  drainGraceMs: number;
  /** `--proxy-protocol`: peers whose connections start with a PROXY header naming the client; empty = off. */
  proxyProtocol: readonly TrustedCidr[];
  /** Pending registrations, the write budget and the audit log's size and retention (config-control-limits.ts). */
  controlLimits: ControlLimits;
}

/** `drain-grace` in whole seconds. */
export const DRAIN_GRACE_RANGE_S = { min: 1, max: 3600, default: 10 } as const;

/** Range of `derp-max-handshakes`: at least a few sources' worth of the per-source cap (32). */
export const DERP_MAX_HANDSHAKES_RANGE = { min: 64, max: 1_048_576, default: 4_096 } as const;

export type HttpLimitsConfig = Omit<HttpLimits, 'maxConnections'> & { maxConnections: number | null };

/** Largest connection cap accepted by --max-connections and --max-connections-per-source. */
const MAX_CONNECTIONS_CEILING = 1_000_000;

/** Flag / file keys in their camelCase form, with the kebab-case spelling used by flags and YAML. */
const KEYS = {
  listen: 'listen',
  metricsListen: 'metrics-listen',
  publicUrl: 'public-url',
  dataDir: 'data-dir',
  store: 'store',
  storePasswordFile: 'store-password-file',
  storeCaFile: 'store-ca-file',
  storePoolSize: 'store-pool-size',
  tlsCert: 'tls-cert',
  tlsKey: 'tls-key',
  udpPort: 'udp-port',
  udpPublicEndpoint: 'udp-public-endpoint',
  stunPort: 'stun-port',
  stunServer: 'stun-server',
  logLevel: 'log-level',
  logFormat: 'log-format',
  leaseDuration: 'lease-duration',
  plainHttp: 'plain-http',
  publicCaFile: 'public-ca-file',
  derpMaxHandshakes: 'derp-max-handshakes',
  headerTimeout: 'header-timeout',
  bodyTimeout: 'body-timeout',
  idleTimeout: 'idle-timeout',
  maxConnections: 'max-connections',
  maxConnectionsPerSource: 'max-connections-per-source',
  hubKeyFile: 'hub-key-file',
  meshUrl: 'mesh-url',
  meshKeyFile: 'mesh-key-file',
  meshDeadAfter: 'mesh-dead-after',
  drainGrace: 'drain-grace',
  mode: 'mode',
  proxyProtocol: 'proxy-protocol',
  maxPendingRegistrations: 'max-pending-registrations',
  maxPendingPerKey: 'max-pending-per-key',
  writeBudget: 'write-budget',
  auditMaxRows: 'audit-max-rows',
  auditRetention: 'audit-retention',
} as const;
type Key = keyof typeof KEYS;
type Raw = Partial<Record<Key, unknown>>;

export interface ResolveInput {
  /** Parsed command-line flags (camelCase, as commander gives them). Unknown keys are ignored. */
  flags?: Record<string, unknown>;
  /** Environment; defaults to none (pass process.env explicitly). */
  env?: Record<string, string | undefined>;
  /** Path of a YAML config file (the `--config` flag); absent = none. */
  configFile?: string | null;
  /** Base for relative paths; defaults to process.cwd(). */
  cwd?: string;
}

function bad(key: string, source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `${key} (${source}): ${reason}`);
}

function envName(key: Key): string {
  return `TUNNEL_RELAY_${KEYS[key].replace(/-/g, '_').toUpperCase()}`;
}

function readConfigFile(path: string): Raw {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'read error';
    bad('config', path, `cannot read the file (${code})`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    bad('config', path, `not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) bad('config', path, 'the file must hold a YAML mapping');
  const out: Raw = {};
  const byName = new Map<string, Key>();
  for (const k of Object.keys(KEYS) as Key[]) {
    byName.set(k, k);
    byName.set(KEYS[k], k);
  }
  for (const [name, value] of Object.entries(doc as Record<string, unknown>)) {
    const key = byName.get(name);
    if (!key) {
      bad(name, path, `unknown key; valid keys: ${Object.values(KEYS).join(', ')}`);
    }
    out[key] = value;
  }
  return out;
}

function parsePort(value: unknown, key: string, source: string, allowOff: boolean): number | null {
  if (allowOff && (value === 'off' || value === false)) return null;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,5}$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    bad(
      key,
      source,
      `expected a port number 0-65535${allowOff ? " or 'off'" : ''}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

export function parseListen(value: unknown, source = 'flag', key = 'listen'): { host: string; port: number } {
  if (typeof value !== 'string') bad(key, source, 'expected HOST:PORT');
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(value);
  if (!m) bad(key, source, `expected HOST:PORT (IPv6 as [::1]:8443), got ${JSON.stringify(value)}`);
  const host = (m[1] ?? m[2])!;
  const port = parsePort(m[3], key, source, false)!;
  return { host, port };
}

function parseMetricsListen(picked: [unknown, string] | undefined): RelayConfig['metricsListen'] {
  if (!picked || picked[0] === 'off') return null;
  return parseListen(picked[0], picked[1], 'metrics-listen');
}

function parseUrl(value: unknown, source: string): string {
  if (typeof value !== 'string') bad('public-url', source, 'expected an https:// URL');
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    bad('public-url', source, `not a URL: ${JSON.stringify(value)}`);
  }
  if (u.protocol !== 'https:') {
    bad('public-url', source, `must start with https://, got ${JSON.stringify(value)}`);
  }
  if (u.username || u.password || u.search || u.hash) {
    bad('public-url', source, 'must not carry credentials, a query or a fragment');
  }
  return u.origin + u.pathname.replace(/\/+$/, '');
}

function parseBool(value: unknown, key: string, source: string): boolean {
  if (value === true || value === false) return value;
  if (typeof value === 'string' && /^(true|1|yes|on)$/i.test(value)) return true;
  if (typeof value === 'string' && /^(false|0|no|off)$/i.test(value)) return false;
  bad(key, source, `expected true or false, got ${JSON.stringify(value)}`);
}

function pathValue(value: unknown, key: string, source: string, cwd: string): string {
  if (typeof value !== 'string' || value.length === 0) bad(key, source, 'expected a file or directory path');
  return isAbsolute(value) ? value : resolve(cwd, value);
}

interface WholeRange {
  min: number;
  max: number;
  /** How the range reads in the error, e.g. `whole seconds 1-3600`. */
  expected: string;
}

/** A whole number in min..max of the value `pick` found for `key` (flags and env give text, YAML numbers). */
function parseWhole(found: [unknown, string], key: Key, range: WholeRange): number {
  const [value, source] = found;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,9}$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < range.min || n > range.max) {
    bad(KEYS[key], source, `expected ${range.expected}, got ${JSON.stringify(value)}`);
  }
  return n;
}

type Picker = (key: Key) => [unknown, string] | undefined;

const TIMEOUT_SECONDS: WholeRange = {
  ...TIMEOUT_RANGE_S,
  expected: `whole seconds ${TIMEOUT_RANGE_S.min}-${TIMEOUT_RANGE_S.max}`,
};
const TOTAL_CONNECTIONS: WholeRange = {
  min: MIN_MAX_CONNECTIONS,
  max: MAX_CONNECTIONS_CEILING,
  expected: `a connection count ${MIN_MAX_CONNECTIONS}-${MAX_CONNECTIONS_CEILING}`,
};
const DRAIN_GRACE_SECONDS: WholeRange = {
  ...DRAIN_GRACE_RANGE_S,
  expected: `whole seconds ${DRAIN_GRACE_RANGE_S.min}-${DRAIN_GRACE_RANGE_S.max}`,
};
const SOURCE_CONNECTIONS: WholeRange = {
  min: 1,
  max: MAX_CONNECTIONS_CEILING,
  expected: `a connection count 1-${MAX_CONNECTIONS_CEILING} or 'off'`,
};

/** The per-source cap: default 128, off by default with plain-http (the terminator is the only source). */
function pendingPerSource(pick: Picker, plainHttp: boolean): number | null {
  const v = pick('maxConnectionsPerSource');
  if (!v) return plainHttp ? null : DEFAULT_MAX_PENDING_PER_SOURCE;
  if (v[0] === 'off' || v[0] === false) return null;
  return parseWhole(v, 'maxConnectionsPerSource', SOURCE_CONNECTIONS);
}

function resolveHttpLimits(pick: Picker, plainHttp: boolean): HttpLimitsConfig {
  const seconds = (key: Key, fallback: number): number => {
    const v = pick(key);
    return (v ? parseWhole(v, key, TIMEOUT_SECONDS) : fallback) * 1000;
  };
  const maxV = pick('maxConnections');
  return {
    headerTimeoutMs: seconds('headerTimeout', DEFAULT_HEADER_TIMEOUT_S),
    bodyTimeoutMs: seconds('bodyTimeout', DEFAULT_BODY_TIMEOUT_S),
    idleTimeoutMs: seconds('idleTimeout', DEFAULT_IDLE_TIMEOUT_S),
    maxConnections: maxV ? parseWhole(maxV, 'maxConnections', TOTAL_CONNECTIONS) : null,
    maxPendingPerSource: pendingPerSource(pick, plainHttp),
  };
}

/** The layers in order of precedence (file < env < flags), each as [where, values]. */
function configLayers(input: ResolveInput, cwd: string): Array<[string, Raw]> {
  const env = input.env ?? {};
  const flags = input.flags ?? {};
  const configPath = input.configFile ?? (typeof flags.config === 'string' ? flags.config : null);
  const file = configPath ? readConfigFile(pathValue(configPath, 'config', 'flag', cwd)) : {};
  const fromEnv: Raw = {};
  const fromFlags: Raw = {};
  for (const key of Object.keys(KEYS) as Key[]) {
    const v = env[envName(key)];
    if (v !== undefined && v !== '') fromEnv[key] = v;
    if (flags[key] !== undefined) fromFlags[key] = flags[key];
  }
  return [
    [configPath ?? 'file', file],
    ['env', fromEnv],
    ['flag', fromFlags],
  ];
}

/** The winning value for a key and where it came from, over `layers`. */
function pickerOf(layers: Array<[string, Raw]>): Picker {
  return (key) => {
    for (let i = layers.length - 1; i >= 0; i--) {
      const [source, raw] = layers[i]!;
      if (raw[key] !== undefined && raw[key] !== null) {
        return [raw[key], source === 'env' ? envName(key) : source === 'flag' ? `--${KEYS[key]}` : source];
      }
    }
    return undefined;
  };
}

type TlsFiles = Pick<RelayConfig, 'tlsCert' | 'tlsKey' | 'plainHttp' | 'publicCaFile'>;

/** --tls-cert/--tls-key (both or neither), --plain-http (needs --public-url, no certificate) and --public-ca-file. */
function resolveTls(pick: Picker, cwd: string): TlsFiles {
  const certV = pick('tlsCert');
  const keyV = pick('tlsKey');
  const tlsCert = certV ? pathValue(certV[0], 'tls-cert', certV[1], cwd) : null;
  const tlsKey = keyV ? pathValue(keyV[0], 'tls-key', keyV[1], cwd) : null;
  if ((tlsCert === null) !== (tlsKey === null)) {
    const [k, s] = certV ? ['tls-key', certV[1]] : ['tls-cert', keyV![1]];
    bad(k, s, 'tls-cert and tls-key must be given together');
  }
  const plainV = pick('plainHttp');
  const plainHttp = plainV ? parseBool(plainV[0], 'plain-http', plainV[1]) : false;
  const caFileV = pick('publicCaFile');
  const publicCaFile = caFileV ? pathValue(caFileV[0], 'public-ca-file', caFileV[1], cwd) : null;
  if (plainHttp) {
    const where = plainV![1];
    if (!pick('publicUrl')) {
      bad(
        'public-url',
        where,
        'plain-http needs --public-url https://... (the URL agents and users reach through the TLS terminator)',
      );
    }
    for (const [key, v] of [['tls-cert', certV] as const, ['tls-key', keyV] as const]) {
      if (v)
        bad(key, v[1], `${JSON.stringify(v[0])} cannot be used with plain-http (TLS is terminated in front)`);
    }
  } else if (caFileV) {
    bad('public-ca-file', caFileV[1], `${JSON.stringify(caFileV[0])} only applies with plain-http`);
  }
  return { tlsCert, tlsKey, plainHttp, publicCaFile };
}

type UdpSettings = Pick<RelayConfig, 'udpPort' | 'udpPublicEndpoint' | 'stunPort' | 'stunServers'>;

/** The WireGuard UDP port (default 51820 on a hub, off in relay mode), its public endpoint, STUN. */
function resolveUdp(pick: Picker, mode: RelayMode): UdpSettings {
  const udpV = pick('udpPort');
  const udpPort = udpV ? parsePort(udpV[0], 'udp-port', udpV[1], true) : mode === 'hub' ? 51820 : null;
  const udpPublicV = pick('udpPublicEndpoint');
  const udpPublicEndpoint = udpPublicV ? parseUdpPublicEndpoint(udpPublicV[0], udpPublicV[1]) : null;
  if (udpPublicV && udpPort === null) {
    bad('udp-public-endpoint', udpPublicV[1], 'only applies while --udp-port is on (it is off)');
  }
  const stunV = pick('stunPort');
  const stunPort = stunV ? parsePort(stunV[0], 'stun-port', stunV[1], true) : 3478;
  const stunServersV = pick('stunServer');
  const stunServers = stunServersV ? parseStunServers(stunServersV[0], stunServersV[1]) : [];
  if (stunServersV && udpPort === null) {
    bad('stun-server', stunServersV[1], 'only applies while --udp-port is on (it is off)');
  }
  return { udpPort, udpPublicEndpoint, stunPort, stunServers };
}

/** --log-level and --log-format. */
function resolveLogging(pick: Picker): Pick<RelayConfig, 'logLevel' | 'logFormat'> {
  const levelV = pick('logLevel');
  const logLevel = LOG_LEVELS.find((l) => l === (levelV ? levelV[0] : 'info'));
  if (logLevel === undefined) {
    bad(
      'log-level',
      levelV![1],
      `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(levelV![0])}`,
    );
  }
  const formatV = pick('logFormat');
  const logFormat = formatV ? (LOG_FORMATS.find((f) => f === formatV[0]) ?? null) : null;
  if (formatV && logFormat === null) {
    bad('log-format', formatV[1], `expected json or pretty, got ${JSON.stringify(formatV[0])}`);
  }
  return { logLevel, logFormat };
}

function leaseDurationSeconds(pick: Picker): number {
  const leaseV = pick('leaseDuration');
  if (!leaseV) return 60;
  const n = typeof leaseV[0] === 'number' ? leaseV[0] : Number(leaseV[0]);
  if (!Number.isInteger(n) || n < 10 || n > 3600) {
    bad('lease-duration', leaseV[1], `expected whole seconds 10-3600, got ${JSON.stringify(leaseV[0])}`);
  }
  return n;
}

/** --mode with what it refuses, then the fleet's files: --hub-key-file and the mesh. */
function resolveFleet(
  pick: Picker,
  o: { cwd: string; store: StoreConfig; listen: RelayConfig['listen']; plainHttp: boolean },
): Pick<RelayConfig, 'mode' | 'hubKeyFile' | 'mesh'> {
  const postgres = o.store.kind === 'postgres';
  checkRelayMode({
    mode: pick('mode'),
    postgres,
    meshKeyFile: pick('meshKeyFile'),
    hubKeyFile: pick('hubKeyFile'),
    udpPort: pick('udpPort'),
    plainHttp: o.plainHttp,
    derpMaxHandshakes: pick('derpMaxHandshakes'),
  });
  const hubKeyV = pick('hubKeyFile');
  return {
    mode: parseMode(pick('mode')),
    hubKeyFile: hubKeyV ? filePath(hubKeyV[0], 'hub-key-file', hubKeyV[1], o.cwd) : null,
    mesh: parseMeshSettings({
      meshUrl: pick('meshUrl'),
      meshKeyFile: pick('meshKeyFile'),
      deadAfter: pick('meshDeadAfter'),
      listen: o.listen,
      plainHttp: o.plainHttp,
      postgres,
      cwd: o.cwd,
    }),
  };
}

/** Resolves the relay's configuration. Throws TunnelError('BAD_CONFIG') naming the bad key. */
export function resolveRelayConfig(input: ResolveInput = {}): RelayConfig {
  const cwd = input.cwd ?? process.cwd();
  const pick = pickerOf(configLayers(input, cwd));
  const listenV = pick('listen');
  const listen = listenV ? parseListen(listenV[0], listenV[1]) : { host: '127.0.0.1', port: 8443 };
  const publicV = pick('publicUrl');
  const dataV = pick('dataDir');
  const dataDir = dataV ? pathValue(dataV[0], 'data-dir', dataV[1], cwd) : join(homedir(), '.tunnel-relay');
  const store = parseStoreSettings({
    store: pick('store'),
    passwordFile: pick('storePasswordFile'),
    caFile: pick('storeCaFile'),
    poolSize: pick('storePoolSize'),
    env: input.env ?? {},
    cwd,
    defaultSqlitePath: join(dataDir, 'relay.db'),
  });
  const tls = resolveTls(pick, cwd);
  const fleet = resolveFleet(pick, { cwd, store, listen, plainHttp: tls.plainHttp });
  return {
    listen,
    metricsListen: parseMetricsListen(pick('metricsListen')),
    publicUrl: publicV ? parseUrl(publicV[0], publicV[1]) : null,
    dataDir,
    store,
    ...tls,
    ...resolveUdp(pick, fleet.mode),
    ...resolveLogging(pick),
    leaseDurationSeconds: leaseDurationSeconds(pick),
    derpMaxHandshakes: parseDerpMaxHandshakes(pick('derpMaxHandshakes')),
    http: resolveHttpLimits(pick, tls.plainHttp),
    ...fleet,
    drainGraceMs: drainGraceMs(pick),
    proxyProtocol: parseProxyProtocol(pick('proxyProtocol')),
    controlLimits: parseControlLimits({
      maxPendingRegistrations: pick('maxPendingRegistrations'),
      maxPendingPerKey: pick('maxPendingPerKey'),
      writeBudget: pick('writeBudget'),
      auditMaxRows: pick('auditMaxRows'),
      auditRetention: pick('auditRetention'),
    }),
  };
}

function drainGraceMs(pick: Picker): number {
  const v = pick('drainGrace');
  return (v ? parseWhole(v, 'drainGrace', DRAIN_GRACE_SECONDS) : DRAIN_GRACE_RANGE_S.default) * 1000;
}

function parseDerpMaxHandshakes(picked: [unknown, string] | undefined): number {
  const { min, max } = DERP_MAX_HANDSHAKES_RANGE;
  if (!picked) return DERP_MAX_HANDSHAKES_RANGE.default;
  const [value, source] = picked;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d+$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    bad('derp-max-handshakes', source, `expected a whole number ${min}-${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}
