import { describe, expect, it } from 'vitest';
import type { LeaseReply } from '../../shared/api/lease.js';
import { agentReasonOf, ReasonReport } from './reason-report.js';
import { type ConnectionStats, DISCONNECTED } from './types.js';

const relayedFor = (reason: string | null): ConnectionStats => ({
  ...DISCONNECTED,
  connected: true,
  path: 'relayed',
  pathDetail: { remote: null, rttDirectMs: null, rttRelayedMs: 9, lastSwitch: null, reason },
});
const answer = (takes?: boolean): LeaseReply => ({
  leaseDurationSeconds: 60,
  renewAfterSeconds: 60,
  valuesVersion: 'v',
  ...(takes === undefined ? {} : { takesRelayedReason: takes }),
});

describe('ReasonReport', () => {
  it('reports only the reasons the agent alone knows, while connected and not direct', () => {
    expect(agentReasonOf(relayedFor('443-only'))).toBe('443-only');
    expect(agentReasonOf(relayedFor('mapping-varies'))).toBe('mapping-varies');
    expect(agentReasonOf(relayedFor('no-answer'))).toBeNull();
    expect(agentReasonOf(relayedFor('confirming'))).toBeNull();
    expect(agentReasonOf({ ...relayedFor('udp-blocked'), path: 'direct' })).toBeNull();
    expect(agentReasonOf({ ...relayedFor('udp-blocked'), connected: false })).toBeNull();
    expect(agentReasonOf(DISCONNECTED)).toBeNull();
  });

  it('sends nothing to a relay that did not say it takes the field (an older relay refuses it)', () => {
    const r = new ReasonReport(() => relayedFor('443-only'));
    expect(r.body()).toEqual({});
    expect(r.due()).toBe(false);
    r.renewed({}, answer());
    expect(r.body()).toEqual({});
    expect(r.due()).toBe(false);
  });

  it('a relay that takes the field holds null after a renewal without it: nothing to send while direct', () => {
    let stats: ConnectionStats = { ...relayedFor(null), path: 'direct' };
    const r = new ReasonReport(() => stats);
    r.renewed(r.body(), answer(true));
    expect(r.due()).toBe(false);
    stats = relayedFor('udp-blocked');
    expect(r.due()).toBe(true);
    expect(r.body()).toEqual({ relayedReason: 'udp-blocked' });
  });

  it('is not due while the relay connection is down, and due again if the reason differs once it is back', () => {
    let stats = relayedFor('no-stun-answer');
    const r = new ReasonReport(() => stats);
    r.renewed({ relayedReason: 'no-stun-answer' }, answer(true));
    expect(r.due()).toBe(false);
    stats = DISCONNECTED;
    expect(r.due()).toBe(false);
    stats = relayedFor('no-stun-answer');
    expect(r.due()).toBe(false);
    stats = relayedFor('udp-blocked');
    expect(r.due()).toBe(true);
  });

  it('once the relay takes it: due until a renewal carried the current reason, again on a change', () => {
    let stats = relayedFor('443-only');
    const r = new ReasonReport(() => stats);
    r.renewed(r.body(), answer(true));
    expect(r.due()).toBe(true);
    const body = r.body();
    expect(body).toEqual({ relayedReason: '443-only' });
    r.renewed(body, answer(true));
    expect(r.due()).toBe(false);
    stats = { ...stats, path: 'direct' };
    expect(r.due()).toBe(true);
    expect(r.body()).toEqual({ relayedReason: null });
    r.renewed(r.body(), answer(true));
    expect(r.due()).toBe(false);
    r.renewed(r.body(), answer(false)); // the relay was rolled back
    expect(r.body()).toEqual({});
    expect(r.due()).toBe(false);
  });
});
