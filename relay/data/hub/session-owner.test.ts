import { describe, expect, it } from 'vitest';
import { SessionOwner } from './session-owner.js';

const AGENT = Buffer.alloc(32, 1);
const STOCK = Buffer.alloc(32, 2);
const UNKNOWN = Buffer.alloc(32, 3);

function owner(o: { connected?: Buffer[]; disco?: Buffer[]; elsewhere?: string[] }) {
  const has = (list: Buffer[] | undefined, k: Buffer) => (list ?? []).some((b) => b.equals(k));
  return new SessionOwner({
    relayConnected: (k) => has(o.connected, k),
    speaksDisco: (k) => has(o.disco, k),
    clusterOf: (k) => (k.equals(AGENT) ? 'edge' : k.equals(STOCK) ? 'stock' : undefined),
    fleet: { heldElsewhere: (c) => (o.elsewhere ?? []).includes(c) },
  });
}

describe('SessionOwner', () => {
  it('answers an agent whose relay connection is here, whatever the store says', () => {
    expect(owner({ connected: [AGENT], disco: [AGENT], elsewhere: ['edge'] }).answers(AGENT)).toBe(true);
  });

  it('never answers an agent that speaks disco and whose relay connection is not here', () => {
    expect(owner({ disco: [AGENT] }).answers(AGENT)).toBe(false);
  });

  it('answers a stock WireGuard peer unless another replica holds its session', () => {
    expect(owner({}).answers(STOCK)).toBe(true);
    expect(owner({ elsewhere: ['stock'] }).answers(STOCK)).toBe(false);
    expect(owner({}).answers(UNKNOWN)).toBe(false);
  });
});
