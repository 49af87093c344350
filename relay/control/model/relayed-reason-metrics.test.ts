import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AGENT_REASONS, RELAYED_REASON_TEXT } from '../../../shared/net/tunnel-endpoint/relayed-reasons.js';
import { agentsRelayedSamples } from './relayed-reason-metrics.js';

const seriesValue = (samples: ReturnType<typeof agentsRelayedSamples>, reason: string, from: string) =>
  samples.find(([l]) => l.reason === reason && l.from === from)?.[1];

describe('agentsRelayedSamples (tunnel_relay_agents_relayed)', () => {
  it("counts each agent under the reason its cluster shows: the agent's first, else the hub's", () => {
    const samples = agentsRelayedSamples([
      { hubReason: 'no-candidates', agentReason: '443-only', agents: 2 },
      { hubReason: 'no-answer', agentReason: '443-only', agents: 1 },
      { hubReason: 'no-candidates', agentReason: null, agents: 4 },
      { hubReason: null, agentReason: 'udp-blocked', agents: 1 },
      { hubReason: null, agentReason: null, agents: 5 },
    ]);
    expect(seriesValue(samples, '443-only', 'agent')).toBe(3);
    expect(seriesValue(samples, 'udp-blocked', 'agent')).toBe(1);
    expect(seriesValue(samples, 'no-candidates', 'hub')).toBe(4);
    expect(seriesValue(samples, 'none', 'none')).toBe(5);
    expect(seriesValue(samples, 'no-answer', 'hub')).toBe(0);
  });

  it('folds codes this relay does not know into other, by who reported them', () => {
    const samples = agentsRelayedSamples([
      { hubReason: 'no-answer', agentReason: 'ipv6-only', agents: 2 },
      { hubReason: 'wormhole', agentReason: null, agents: 3 },
      // A hub-only code stored as the agent's (a newer replica took it): not the agent's to give.
      { hubReason: null, agentReason: 'no-candidates', agents: 1 },
    ]);
    expect(seriesValue(samples, 'other', 'agent')).toBe(3);
    expect(seriesValue(samples, 'other', 'hub')).toBe(3);
    expect(samples.some(([l]) => l.reason === 'ipv6-only' || l.reason === 'wormhole')).toBe(false);
  });

  it('property: the same fixed label set for any counts, and every agent counted once', () => {
    const fixed = agentsRelayedSamples([]).map(([l]) => `${l.reason}/${l.from}`);
    expect(fixed).toHaveLength(AGENT_REASONS.length + Object.keys(RELAYED_REASON_TEXT).length + 3);
    const code = fc.oneof(
      fc.constant(null),
      fc.constantFrom(...Object.keys(RELAYED_REASON_TEXT)),
      fc.string({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ hubReason: code, agentReason: code, agents: fc.nat(1_000) }), {
          maxLength: 30,
        }),
        (counts) => {
          const samples = agentsRelayedSamples(counts);
          expect(samples.map(([l]) => `${l.reason}/${l.from}`)).toEqual(fixed);
          const total = samples.reduce((sum, [, v]) => sum + v, 0);
          expect(total).toBe(counts.reduce((sum, c) => sum + c.agents, 0));
        },
      ),
      { numRuns: 500 },
    );
  });
});
