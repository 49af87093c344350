/**
 * The agent runner's data plane (DataPlaneFactory): once the cluster is Accepted, an AgentSession to the
 * hub over the relay (trusting the relay the way the state dir says: CA pin, or a CA file) whose streams
 * go to the allowlist dialer (tunnel-client/dialer). Upstream TLS trust: dialer/upstream-trust.ts.
 */
import { readFileSync } from 'node:fs';
import { realClock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { wsAgentFor } from '../../shared/kit/proxy/transports.js';
import type { Values } from '../../shared/kit/values/deep-merge.js';
import type { DataPlane, DataPlaneFactory } from '../agent/agent.js';
import { Allowlist } from '../dialer/allowlist.js';
import { Dialer } from '../dialer/dialer.js';
import { upstreamTrust } from '../dialer/upstream-trust.js';
import { AgentSession, type AgentSessionOptions, type PathPolicy } from './agent-session.js';

/**
 * The cluster's `path` value: `relay-only` keeps the tunnel on the relay; `auto` (or absent) lets it go direct.
 * Anything else is reported through `warn` and treated as auto.
 */
export function pathPolicyOf(values: Values, warn: (line: string) => void): PathPolicy {
  const v = values.path;
  if (v === undefined || v === 'auto') return 'auto';
  if (v === 'relay-only') return 'relay-only';
  const shown =
    typeof v === 'string' ? JSON.stringify(v.slice(0, 40)) : `a ${v === null ? 'null' : typeof v}`;
  warn(`values: path must be auto or relay-only, got ${shown}; using auto`);
  return 'auto';
}

export interface AgentDataPlaneOptions {
  log?: (line: string) => void;
  /** Overrides for the session (intervals, relay-client backoff); tests. */
  session?: Partial<Omit<AgentSessionOptions, 'privateKey' | 'tunnel' | 'onChange' | 'onStream'>>;
  dialTimeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

export interface AgentDataPlane extends DataPlane {
  readonly session: AgentSession;
  readonly dialer: Dialer;
  whenUp(timeoutMs?: number): Promise<void>;
}

function readCa(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new TunnelError('BAD_CONFIG', `CA file '${file}' from the state dir cannot be read (${code})`);
  }
}

export function agentDataPlane(opts: AgentDataPlaneOptions = {}): DataPlaneFactory {
  const env = opts.env ?? process.env;
  const start: DataPlaneFactory = async (ctx) => {
    const trust = upstreamTrust(env, ctx.state.upstream);
    const dialer = new Dialer({
      allowlist: new Allowlist(ctx.state.upstream, ctx.state.allow),
      clock: realClock,
      upstreamCa: trust.ca,
      upstreamInsecure: trust.insecure,
      upstreamTokenFile: trust.tokenFile,
      upstreamDial: trust.dial,
      dialTimeoutMs: opts.dialTimeoutMs,
      log: opts.log,
    });
    const agent = ctx.proxy ? wsAgentFor(ctx.proxy, ctx.tunnel.derpUrl) : undefined;
    const session = new AgentSession({
      ...opts.session,
      derp: agent ? { ...opts.session?.derp, agent } : opts.session?.derp,
      privateKey: ctx.privateKey,
      tunnel: ctx.tunnel,
      caPin: ctx.state.caPin ?? undefined,
      ca: ctx.state.caFile ? readCa(ctx.state.caFile) : undefined,
      onChange: ctx.onChange,
      onRelayRefused: ctx.onRelayRefused,
      onStream: (s) => dialer.handle(s),
      egress: ctx.state.egress ?? 'auto',
      stunServers: ctx.state.stunServers ?? [],
      log: opts.log ?? opts.session?.log,
    });
    let policy: PathPolicy | undefined;
    const dp: AgentDataPlane = {
      session,
      dialer,
      stats: () => session.stats(),
      whenUp: (ms) => session.whenUp(ms),
      drain: (graceMs) => session.drain(graceMs),
      relayAnswered: () => session.relayAnswered(),
      applyValues: (values) => {
        const next = pathPolicyOf(values, (line) => opts.log?.(line));
        if (next === policy) return;
        policy = next;
        session.setPathPolicy(next);
      },
      close: () => session.close(),
    };
    return dp;
  };
  return Object.assign(start, { check: () => void upstreamTrust(env, null) });
}
