/**
 * The agent runner's data plane (DataPlaneFactory): once the cluster is Accepted, an AgentSession to the
 * hub over the relay, trusting the relay the way the state dir says (CA pin, or a CA file).
 */
import { readFileSync } from 'node:fs';
import { TunnelError } from '../../shared/errors.js';
import { wsAgentFor } from '../../shared/proxy/transports.js';
import type { DataPlane, DataPlaneFactory } from '../agent/agent.js';
import { AgentSession, type AgentSessionOptions } from './agent-session.js';

export interface SessionDataPlaneOptions {
  log?: (line: string) => void;
  /** Overrides for the session (intervals, relay-client backoff); tests. */
  session?: Partial<Omit<AgentSessionOptions, 'privateKey' | 'tunnel' | 'onChange'>>;
  /** Called with each new session (wiring: attach the streams layer via setInnerPacketHandler). */
  onSession?: (session: AgentSession, ctx: Parameters<DataPlaneFactory>[0]) => void;
}

export interface SessionDataPlane extends DataPlane {
  readonly session: AgentSession;
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

export function sessionDataPlane(opts: SessionDataPlaneOptions = {}): DataPlaneFactory {
  return async (ctx) => {
    const agent = ctx.proxy ? wsAgentFor(ctx.proxy, ctx.tunnel.derpUrl) : undefined;
    const session = new AgentSession({
      ...opts.session,
      ...(agent ? { derp: { ...opts.session?.derp, agent } } : {}),
      privateKey: ctx.privateKey,
      tunnel: ctx.tunnel,
      caPin: ctx.state.caPin ?? undefined,
      ca: ctx.state.caFile ? readCa(ctx.state.caFile) : undefined,
      onChange: ctx.onChange,
      ...(opts.log ? { log: opts.log } : {}),
    });
    opts.onSession?.(session, ctx);
    const dp: SessionDataPlane = {
      session,
      stats: () => session.stats(),
      whenUp: (ms) => session.whenUp(ms),
      close: () => session.close(),
    };
    return dp;
  };
}
