import { describe, expect, it } from 'vitest';
import { relayedReasonText } from './relayed-reasons.js';

describe('relayed reason text', () => {
  it('adds the words to a known code and leaves an unknown one as it is', () => {
    expect(relayedReasonText('mapping-varies')).toBe('mapping-varies (NAT mapping varies by destination)');
    expect(relayedReasonText('some-new-reason')).toBe('some-new-reason');
    expect(relayedReasonText('toString')).toBe('toString');
  });
});
