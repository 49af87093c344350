import { describe, expect, it } from 'vitest';
import { FakeClock } from './clock.js';

describe('FakeClock', () => {
  it('fires timers in deadline order, and timers set by timers', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push(`c@${clock.now()}`));
    clock.setTimer(10, () => {
      fired.push(`a@${clock.now()}`);
      clock.setTimer(5, () => fired.push(`b@${clock.now()}`));
    });
    const gone = clock.setTimer(20, () => fired.push('never'));
    clock.clearTimer(gone);
    clock.advance(25);
    expect(fired).toEqual(['a@10', 'b@15']);
    expect(clock.now()).toBe(25);
    clock.advance(10);
    expect(fired).toEqual(['a@10', 'b@15', 'c@30']);
    expect(clock.pendingTimers).toBe(0);
  });
});
