/**
 * The agent's own relayed reason, from its lease body (`relayedReason`, docs/API.md): hostile input.
 * - a code of AGENT_REASONS: kept (the cluster's path details show it before the hub's own reason);
 * - null or absent: the agent reports none (it is direct, or only the hub can say why, or it is older);
 * - a well-formed code this relay does not take (a newer agent's, a hub-only one): ignored like null, so the lease
 *   still renews, and counted (`ignored`: tunnel_relay_lease_reasons_ignored_total);
 * - anything else (not a string, over REASON_CODE_MAX characters, other characters): BAD_INPUT naming the value.
 */
import { REASON_CODE_MAX } from '../../../shared/api/body-limits.js';
import { TunnelError } from '../../../shared/errors.js';
import { type AgentReason, isAgentReason } from '../../../shared/net/tunnel-endpoint/relayed-reasons.js';

const CODE = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

function shown(raw: unknown): string {
  if (Array.isArray(raw)) return 'a list';
  if (typeof raw === 'object') return 'an object';
  if (typeof raw !== 'string') return `a ${typeof raw}`;
  return JSON.stringify(raw.length > REASON_CODE_MAX ? `${raw.slice(0, REASON_CODE_MAX)}...` : raw);
}

export interface ParsedAgentReason {
  /** The reason to store for the cluster (null: none). */
  readonly reason: AgentReason | null;
  /** True for a well-formed code this relay does not take. */
  readonly ignored: boolean;
}

/** The lease body's `relayedReason`; throws BAD_INPUT for a value that is no reason code. */
export function parseAgentReason(raw: unknown): ParsedAgentReason {
  if (raw === undefined || raw === null) return { reason: null, ignored: false };
  if (typeof raw !== 'string' || raw.length > REASON_CODE_MAX || !CODE.test(raw)) {
    throw new TunnelError(
      'BAD_INPUT',
      `body.relayedReason: ${shown(raw)} is not a reason code (1-${REASON_CODE_MAX} lowercase letters, digits and '-', or null)`,
    );
  }
  return isAgentReason(raw) ? { reason: raw, ignored: false } : { reason: null, ignored: true };
}
