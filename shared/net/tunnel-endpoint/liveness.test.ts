import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { Liveness } from './liveness.js';

function liveness() {
  const clock = new FakeClock();
  return { clock, l: new Liveness({ clock, probeMs: 2_000, idleProbeMs: 25_000, deadMs: 6_000 }) };
}

describe('Liveness', () => {
  it('probes every 2 s under traffic and every 25 s idle', () => {
    const { clock, l } = liveness();
    expect(l.due(false)).toBe(true);
    l.sent();
    l.answered();
    clock.advance(2_000);
    expect(l.due(true)).toBe(true);
    expect(l.due(false)).toBe(false);
    clock.advance(22_999);
    expect(l.due(false)).toBe(false);
    clock.advance(1);
    expect(l.due(false)).toBe(true);
    expect(l.stale).toBe(false);
  });

  it('retries an unanswered idle probe every 2 s and calls the hub gone 6 s after it', () => {
    const { clock, l } = liveness();
    l.sent();
    l.answered();
    clock.advance(25_000);
    l.sent();
    clock.advance(1_999);
    expect(l.retrying).toBe(false);
    clock.advance(1);
    expect(l.retrying).toBe(true);
    expect(l.due(false)).toBe(true);
    l.sent();
    clock.advance(3_999);
    expect(l.stale).toBe(false);
    clock.advance(1);
    expect(l.stale).toBe(true);
    l.answered();
    expect(l.stale).toBe(false);
    expect(l.retrying).toBe(false);
  });

  it('is stale until the hub first answers', () => {
    const { l } = liveness();
    expect(l.stale).toBe(true);
    l.sent();
    expect(l.stale).toBe(true);
    l.answered();
    expect(l.stale).toBe(false);
  });
});
