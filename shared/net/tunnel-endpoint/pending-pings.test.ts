import { describe, expect, it } from 'vitest';
import { PendingPings } from './pending-pings.js';

describe('pending pings', () => {
  it('answers a txid once, expires by send time, and forgets the oldest past the cap', () => {
    const p = new PendingPings<string>(2);
    expect(p.add({ txid: 'a', target: 'x', sentAt: 1 })).toBeUndefined();
    expect(p.add({ txid: 'b', target: 'y', sentAt: 2 })).toBeUndefined();
    expect(p.add({ txid: 'c', target: 'z', sentAt: 3 })?.txid).toBe('a');
    expect(p.take('a')).toBeUndefined();
    expect(p.take('b')?.target).toBe('y');
    expect(p.take('b')).toBeUndefined();
    expect(p.oldestSentAt).toBe(3);
    expect(p.expire(2)).toEqual([]);
    expect(p.expire(3).map((x) => x.txid)).toEqual(['c']);
    expect(p.size).toBe(0);
  });
});
