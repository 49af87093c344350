/** Why a peer's traffic is not direct (path-selector.ts `RelayedReason`), in words for text output. */
import type { RelayedReason } from './path-selector.js';

export const RELAYED_REASON_TEXT: Readonly<Record<RelayedReason, string>> = {
  '443-only': '--egress 443-only: no UDP at all',
  'relay-only': "the cluster's path value is relay-only",
  'udp-blocked': 'UDP blocked: no STUN answer and no probe ever answered',
  'no-stun-answer': 'no STUN answer',
  'mapping-varies': 'NAT mapping varies by destination',
  'no-candidates': 'the peer sent no addresses to try',
  confirming: 'a direct path answered; confirming it',
  'direct-silent': 'the direct path went silent; probing in the background',
  'no-answer': 'no probe answered yet',
};

const BY_CODE = new Map<string, string>(Object.entries(RELAYED_REASON_TEXT));

/** `code (words)` for a known reason, the code alone otherwise (a newer agent's status file). */
export function relayedReasonText(reason: string): string {
  const words = BY_CODE.get(reason);
  return words ? `${reason} (${words})` : reason;
}

/**
 * The reasons only the agent can know (its egress, its cluster's path value, its UDP socket, its STUN verdicts):
 * the agent reports these to the relay with its lease (`relayedReason`, docs/API.md); the relay takes no other.
 */
export const AGENT_REASONS = [
  '443-only',
  'relay-only',
  'udp-blocked',
  'no-stun-answer',
  'mapping-varies',
] as const satisfies readonly RelayedReason[];
export type AgentReason = (typeof AGENT_REASONS)[number];

const AGENT_REASON_SET: ReadonlySet<string> = new Set(AGENT_REASONS);

export function isAgentReason(reason: string): reason is AgentReason {
  return AGENT_REASON_SET.has(reason);
}
