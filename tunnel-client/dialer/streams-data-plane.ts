/**
 * The agent's data plane with hub streams: the WireGuard session over the relay (sessionDataPlane)
 * plus the stream binding on inner UDP port 4789 (mux role 'server', only the hub may start a
 * session) and the allowlist dialer answering each stream.
 *
 * Upstream TLS trust (for `@upstream` with an https URL): the PEM file named by
 * TUNNEL_CLIENT_UPSTREAM_CA, else the in-cluster service-account CA when that file exists, else the
 * system roots. TUNNEL_CLIENT_UPSTREAM_INSECURE=1 turns verification off (tests, never production).
 * TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE (opt-in): path-proxy requests carry that token (token-injector.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { realClock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { parseIpv4Address } from '../../shared/ip/index.js';
import { StreamBinding } from '../../shared/tunnel-streams/stream-binding.js';
import type { DataPlaneFactory } from '../agent/agent.js';
import {
  type SessionDataPlane,
  type SessionDataPlaneOptions,
  sessionDataPlane,
} from '../session/session-data-plane.js';
import { Allowlist } from './allowlist.js';
import { Dialer } from './dialer.js';
import { readToken } from './token-injector.js';

export const IN_CLUSTER_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

export interface StreamsDataPlaneOptions {
  log?: (line: string) => void;
  /** Passed to sessionDataPlane (intervals, relay-client backoff); tests. */
  session?: SessionDataPlaneOptions['session'];
  dialTimeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Called with the live parts once started (tests). */
  onStarted?: (parts: { binding: StreamBinding; dialer: Dialer; dataPlane: SessionDataPlane }) => void;
}

export interface UpstreamTrust {
  ca?: string;
  insecure: boolean;
  /** TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: opt-in credential for path-proxy requests (token-injector.ts). */
  tokenFile?: string;
}

export function upstreamTrust(env: NodeJS.ProcessEnv): UpstreamTrust {
  const insecure = env.TUNNEL_CLIENT_UPSTREAM_INSECURE === '1';
  const tokenFile = env.TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE || undefined;
  if (tokenFile) readToken(tokenFile); // fail at start, naming the file, rather than on the first request
  const base = { insecure, ...(tokenFile ? { tokenFile } : {}) };
  const file = env.TUNNEL_CLIENT_UPSTREAM_CA || (existsSync(IN_CLUSTER_CA) ? IN_CLUSTER_CA : '');
  if (!file) return base;
  try {
    return { ...base, ca: readFileSync(file, 'utf8') };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new TunnelError('BAD_CONFIG', `TUNNEL_CLIENT_UPSTREAM_CA: cannot read '${file}' (${code})`);
  }
}

export function streamsDataPlane(opts: StreamsDataPlaneOptions = {}): DataPlaneFactory {
  const start: DataPlaneFactory = async (ctx) => {
    const allowlist = new Allowlist(ctx.state.upstream, ctx.state.allow);
    const trust = upstreamTrust(opts.env ?? process.env);
    const dialer = new Dialer({
      allowlist,
      clock: realClock,
      upstreamCa: trust.ca,
      upstreamInsecure: trust.insecure,
      upstreamTokenFile: trust.tokenFile,
      ...(opts.dialTimeoutMs ? { dialTimeoutMs: opts.dialTimeoutMs } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    const [self] = ctx.tunnel.address.split('/');
    const hub = parseIpv4Address(ctx.tunnel.hubAddress);
    let dp: SessionDataPlane | undefined;
    const binding = new StreamBinding({
      role: 'server',
      local: parseIpv4Address(self ?? ''),
      clock: realClock,
      send: (p) => dp?.session.sendInner(p),
      accept: (remote) => remote === hub,
      onStream: (s) => dialer.handle(s),
    });
    const factory = sessionDataPlane({
      ...(opts.log ? { log: opts.log } : {}),
      session: { ...opts.session, onInnerPacket: (p) => void binding.input(p) },
    });
    dp = (await factory(ctx)) as SessionDataPlane;
    opts.onStarted?.({ binding, dialer, dataPlane: dp });
    const inner = dp;
    return {
      ...inner,
      stats: () => inner.stats(),
      whenUp: (ms) => inner.whenUp(ms),
      close: async () => {
        binding.close();
        await inner.close();
      },
    };
  };
  return Object.assign(start, { check: () => void upstreamTrust(opts.env ?? process.env) });
}
