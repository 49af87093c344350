/**
 * `tunnel-relay serve`: resolve the configuration (file < TUNNEL_RELAY_* env < flags), start the relay,
 * print where it listens, its CA pin and (on first start only) the admin access key; on SIGINT/SIGTERM
 * drain (RunningRelay.drain: readiness fails, agents are moved once in-flight hub requests are done) and exit 0
 * within --drain-grace; a second signal exits at once. Logs go to stderr so stdout carries only what this command prints; with
 * `--output json` that is one JSON object per line, the first `{"event":"ready",...}`. Logs are pretty on a
 * terminal and JSON otherwise (`--log-format` decides).
 */
import { Command, Option } from 'commander';
import { type OutputFormat, outputOption } from '../../shared/kit/cli/output.js';
import { STORE_PASSWORD_ENV } from '../ops/config/config-store.js';
import type { StartOptions } from '../start/server.js';

export interface ServeFlags {
  listen?: string;
  metricsListen?: string;
  publicUrl?: string;
  dataDir?: string;
  store?: string;
  storePasswordFile?: string;
  storeCaFile?: string;
  storePoolSize?: string;
  tlsCert?: string;
  tlsKey?: string;
  udpPort?: string;
  udpPublicEndpoint?: string;
  stunPort?: string;
  stunServer?: string[];
  config?: string;
  logLevel?: string;
  logFormat?: string;
  leaseDuration?: string;
  plainHttp?: boolean;
  publicCaFile?: string;
  derpMaxHandshakes?: string;
  headerTimeout?: string;
  bodyTimeout?: string;
  idleTimeout?: string;
  maxConnections?: string;
  maxConnectionsPerSource?: string;
  hubKeyFile?: string;
  meshUrl?: string;
  meshKeyFile?: string;
  meshDeadAfter?: string;
  drainGrace?: string;
  mode?: string;
  proxyProtocol?: string;
  maxPendingRegistrations?: string;
  maxPendingPerKey?: string;
  writeBudget?: string;
  auditMaxRows?: string;
  auditRetention?: string;
  output: OutputFormat;
}

/**
 * `loadStartOptions` lets the binary's wiring add plugins (data plane) without changing this command. The relay
 * itself (serve-run.ts) and the plugins are loaded only when serve runs, so the other commands start quickly.
 */
export function serveCommand(loadStartOptions: () => Promise<StartOptions> = async () => ({})): Command {
  return new Command('serve')
    .description(
      'run the relay (control-plane API, packet relay, hub node) on one TLS port (or plain HTTP behind a TLS terminator)',
    )
    .option(
      '--mode <all|relay>',
      'all (or hub): the whole relay (default); relay: a forwarding-only replica of a fleet, no hub key (postgres:// store, mesh key)',
    )
    .option('--listen <host:port>', 'address of the TLS port (default 127.0.0.1:8443; port 0 picks one)')
    .option(
      '--metrics-listen <host:port>',
      'serve /metrics there alone, over plain HTTP, and no longer on --listen (default: /metrics on --listen, unauthenticated)',
    )
    .option('--public-url <url>', 'URL agents and tools use to reach this relay (default: the bound address)')
    .option('--data-dir <dir>', 'where the certificate, keys and SQLite store live (default ~/.tunnel-relay)')
    .option(
      '--store <url>',
      'sqlite:PATH (default DATA_DIR/relay.db) or postgres://USER@HOST[:PORT]/DB[?sslmode=MODE]',
    )
    .option(
      '--store-password-file <file>',
      `PostgreSQL password file (one line; default: the ${STORE_PASSWORD_ENV} environment variable)`,
    )
    .option('--store-ca-file <file>', 'PEM CA certificates that sign the PostgreSQL server certificate')
    .option('--store-pool-size <n>', 'most PostgreSQL connections this relay holds, 1-100 (default 10)')
    .option('--tls-cert <file>', 'PEM certificate to serve instead of the self-signed one (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key for --tls-cert')
    .option('--udp-port <port|off>', 'direct WireGuard UDP port (default 51820)')
    .option(
      '--udp-public-endpoint <host:port>',
      'address agents reach --udp-port at, when not the public URL host and the bound port (NAT, Service)',
    )
    .option('--stun-port <port|off>', 'STUN responder port (default 3478)')
    .option(
      '--stun-server <host:port>',
      "STUN server the hub asks for its UDP port's address behind NAT, offered to agents (repeatable, at most 4)",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--config <file>', 'YAML config file; keys mirror the flags')
    .addOption(
      new Option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (default info)'),
    )
    .option(
      '--log-format <json|pretty>',
      'log lines on stderr: pretty (one readable line per event) or json (default: pretty on a terminal, else json)',
    )
    .option('--lease-duration <seconds>', 'lease duration handed to agents, 10-3600 (default 60)')
    .option(
      '--plain-http',
      'serve plain HTTP on --listen behind a TLS-terminating load balancer (needs --public-url https://...)',
    )
    .option(
      '--public-ca-file <file>',
      'with --plain-http: PEM CA of the terminator certificate, pinned in join commands and kubeconfigs',
    )
    .option(
      '--derp-max-handshakes <n>',
      '/derp connections in the handshake at once, 64-1048576 (default 4096; 32 per source address)',
    )
    .option(
      '--header-timeout <seconds>',
      'a request line and headers must arrive within this, 1-3600 (default 15)',
    )
    .option(
      '--body-timeout <seconds>',
      'a request body must arrive within this after its headers, 1-3600 (default 30)',
    )
    .option(
      '--idle-timeout <seconds>',
      'an idle keep-alive connection is closed after this, 1-3600 (default 90)',
    )
    .option(
      '--max-connections <n>',
      'connections held at once, every kind (default 16384, lowered to fit the open-file limit)',
    )
    .option(
      '--max-connections-per-source <n|off>',
      'connections per source address (IPv6: /64) not yet through a request or upgrade (default 256; off with --plain-http)',
    )
    .option(
      '--hub-key-file <file>',
      "the hub's WireGuard private key (one line, base64; 0600): the same file on every replica (default DATA_DIR/hub.key)",
    )
    .option(
      '--mesh-key-file <file>',
      'secret shared by every replica (>= 32 bytes) that authenticates mesh requests; turns the mesh on (postgres:// store)',
    )
    .option(
      '--mesh-url <url>',
      'https://HOST:PORT other replicas dial to reach this one, e.g. https://$(POD_IP):8443 (default: the --listen address)',
    )
    .option(
      '--mesh-dead-after <seconds>',
      'a replica without a heartbeat this long is gone, 2-300 (default 5)',
    )
    .option(
      '--drain-grace <seconds>',
      'on SIGTERM: how long in-flight hub requests may run before agents are moved and the relay exits, 1-3600 (default 10)',
    )
    .option(
      '--proxy-protocol <cidrs>',
      'load balancers (CIDR[,CIDR...]) whose connections start with a PROXY header (v1 or v2) naming the client (default off)',
    )
    .option(
      '--max-pending-registrations <n>',
      'Pending clusters that bootstrap-key registrations may create, in all, 1-100000 (default 1000)',
    )
    .option(
      '--max-pending-per-key <n>',
      'Pending clusters that one bootstrap key may create, 1-100000 (default 250)',
    )
    .option(
      '--write-budget <n>',
      'mutating API calls per minute per access key (bursts up to it), 1-1000000 (default 240)',
    )
    .option(
      '--audit-max-rows <n>',
      'audit rows kept before rows older than --audit-retention are pruned, 1000-100000000 (default 100000)',
    )
    .option(
      '--audit-retention <duration>',
      'audit rows younger than this are never pruned, 1h-366d (default 30d)',
    )
    .addOption(outputOption())
    .action(async (flags: ServeFlags) => {
      const [{ serve }, startOptions] = await Promise.all([import('./serve-run.js'), loadStartOptions()]);
      await serve(flags, startOptions);
    });
}
