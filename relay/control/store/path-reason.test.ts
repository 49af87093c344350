import { describe, expect, it } from 'vitest';
import { shownReason, withReason } from './path-reason.js';

const hub = {
  remote: null,
  rttDirectMs: null,
  rttRelayedMs: 12,
  lastSwitch: '2026-11-25T11:58:00.000Z',
  reason: 'no-candidates',
};
const relayed = { connected: true, path: 'relayed' };

describe('withReason: the agent reason first, else the hub one', () => {
  it("relayed: the agent's reason wins and says so; without one, the hub's", () => {
    expect(withReason(relayed, hub, '443-only')).toEqual({ ...hub, reason: '443-only', reasonFrom: 'agent' });
    expect(withReason(relayed, hub, null)).toEqual({ ...hub, reasonFrom: 'hub' });
  });

  it('relayed with no hub details (no disco on the hub, or a stale report): the agent reason alone', () => {
    expect(withReason(relayed, null, 'udp-blocked')).toEqual({
      remote: null,
      rttDirectMs: null,
      rttRelayedMs: null,
      lastSwitch: null,
      reason: 'udp-blocked',
      reasonFrom: 'agent',
    });
    expect(withReason(relayed, null, null)).toBeNull();
  });

  it('direct or not connected: an agent reason from an older lease does not show', () => {
    const direct = { ...hub, reason: null };
    expect(withReason({ connected: true, path: 'direct' }, direct, 'udp-blocked')).toEqual({
      ...direct,
      reasonFrom: null,
    });
    expect(withReason({ connected: false, path: 'none' }, null, '443-only')).toBeNull();
  });
});

describe('shownReason: the one precedence of the details, the path history and the metrics', () => {
  it("relayed: the agent's when it gave one, else the hub's; otherwise the hub's (none while direct)", () => {
    const agent = { hubReason: 'no-candidates', agentReason: '443-only' };
    expect(shownReason({ relayed: true, ...agent })).toEqual({ reason: '443-only', reasonFrom: 'agent' });
    expect(shownReason({ relayed: true, ...agent, agentReason: null })).toEqual({
      reason: 'no-candidates',
      reasonFrom: 'hub',
    });
    expect(shownReason({ relayed: false, hubReason: null, agentReason: '443-only' })).toEqual({
      reason: null,
      reasonFrom: null,
    });
  });
});
