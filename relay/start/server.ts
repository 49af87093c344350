/**
 * The relay's start: the types a started relay is seen through, and startRelay, which starts the hub mode
 * (start/hub-start.ts). The pieces of a start live in relay/start/ (ports, TLS trust, the Fastify server, listen,
 * close and drain); the relay mode's in relay/fleet/tier/.
 */
import type { Server as HttpsServer } from 'node:https';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import type { RelayContext } from '../context/context.js';
import type { RelayHooks } from '../control/model/hooks.js';
import type { Store } from '../control/store/types.js';
import type { StunResponder } from '../data/stun/stun-responder.js';
import type { RelayConfig } from '../ops/config/config.js';
import { startHub } from './hub-start.js';

export { httpLimitsOf } from './fastify-app.js';
export {
  BODY_LIMIT,
  CLOSE_GRACE_MS,
  DRAIN_CLOSE_RESERVE_MS,
  DRAIN_QUIET_MS,
  DRAIN_QUIET_RESERVE_MS,
  DRAIN_READINESS_MS,
  REGISTER_FAILURES,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from './limits.js';
export { type OpenStoreOptions, openStore } from './store-open.js';
export { certCovers } from './tls-trust.js';

export interface StartOptions {
  clock?: Clock;
  /** Where log lines go (default stdout). */
  logStream?: DestinationStream;
  /** A store to use instead of the one the config names (tests). */
  store?: Store;
  /** Extra plugins (data plane: /derp, proxies) registered before the server listens. */
  plugins?: Array<(app: FastifyInstance, relay: RelayContext) => Promise<void>>;
}

export interface RunningRelay {
  /** https://host:port the server is bound to (http:// with plain-http). */
  url: string;
  /** URL given to agents (config publicUrl, or `url`). */
  publicUrl: string;
  /**
   * Pin and PEM clients are told to trust: the relay's own certificate, or with plain-http the
   * --public-ca-file certificate(s). Empty strings only with plain-http and no --public-ca-file
   * (clients use their system trust store).
   */
  caPin: string;
  caPem: string;
  /** True when the relay serves plain HTTP behind a TLS terminator. */
  plainHttp: boolean;
  /** The first admin access key: only on the start that created it. */
  adminKey?: string;
  /** Base64 WireGuard public key of the hub node. */
  hubPublicKey: string;
  /** The hub node's WireGuard private key (32 bytes), for the data plane. */
  hubPrivateKey: Buffer;
  fastify: FastifyInstance;
  httpsServer: HttpsServer;
  store: Store;
  hooks: RelayHooks;
  log: Logger;
  context: RelayContext;
  /** The STUN responder on UDP (`--stun-port`), or null when it is off. */
  stun: StunResponder | null;
  close(): Promise<void>;
  /**
   * SIGTERM (relay/fleet/drain.ts): /readyz fails at once and no new agent is admitted; after DRAIN_READINESS_MS,
   * once the hub has no stream in flight (or the grace less DRAIN_CLOSE_RESERVE_MS ran out), the agents get the
   * Restarting frame; requests are served until DRAIN_QUIET_MS pass without one, then the relay closes, cutting
   * connections still open when `graceMs` ends. Resolves when closed.
   */
  drain(graceMs: number): Promise<void>;
}

/**
 * Starts a relay process in the configured mode: `hub` (start/hub-start.ts, everything in one process) or
 * `relay` (tier/tier-start.ts, a forwarding-only replica; it has no RelayContext, so use startRelayTier).
 */
export async function startRelay(config: RelayConfig, opts: StartOptions = {}): Promise<RunningRelay> {
  if (config.mode !== 'hub') {
    throw new TunnelError(
      'INTERNAL',
      `startRelay runs hub mode; --mode ${config.mode} starts with startRelayTier`,
    );
  }
  return startHub(config, opts);
}
