import { describe, expect, it } from 'vitest';
import { MAX_PLACEMENT_CLUSTERS, type PlacementCandidate, StreamPlacement } from './stream-placement.js';

const agent = (n: number): PlacementCandidate => ({ publicKey: `k${n}`, address: `100.64.0.${n}` });
const a = [agent(2), agent(3), agent(4)];

function view(o: { dead?: string[]; draining?: string[]; streams?: Record<string, number> }) {
  return {
    isLive: (c: PlacementCandidate) => !(o.dead ?? []).includes(c.publicKey),
    isDraining: (c: PlacementCandidate) => (o.draining ?? []).includes(c.publicKey),
    openStreams: (c: PlacementCandidate) => o.streams?.[c.publicKey] ?? 0,
  };
}

describe('stream placement', () => {
  it('spreads streams over idle live agents in turn', () => {
    const p = new StreamPlacement();
    const picks = Array.from({ length: 6 }, () => p.pick('c', a, view({}))?.publicKey);
    expect(picks).toEqual(['k2', 'k3', 'k4', 'k2', 'k3', 'k4']);
  });

  it('takes the agent with the fewest open streams', () => {
    const p = new StreamPlacement();
    expect(p.pick('c', a, view({ streams: { k2: 3, k3: 1, k4: 2 } }))?.publicKey).toBe('k3');
  });

  it('never picks a dead or draining agent while another is ready', () => {
    const p = new StreamPlacement();
    const v = view({ dead: ['k2'], draining: ['k3'] });
    for (let i = 0; i < 5; i++) expect(p.pick('c', a, v)?.publicKey).toBe('k4');
  });

  it('with none ready: a draining agent (its restart is awaited), else the first (the open fails clearly)', () => {
    const p = new StreamPlacement();
    expect(p.pick('c', a, view({ dead: ['k2', 'k4'], draining: ['k3'] }))?.publicKey).toBe('k3');
    expect(p.pick('c', a, view({ dead: ['k2', 'k3', 'k4'] }))?.publicKey).toBe('k2');
    expect(p.pick('c', [], view({}))).toBeNull();
  });

  it('a single agent is always picked; turns are kept per cluster, capped', () => {
    const p = new StreamPlacement();
    expect(p.pick('one', [agent(9)], view({ dead: ['k9'] }))?.publicKey).toBe('k9');
    for (let i = 0; i < MAX_PLACEMENT_CLUSTERS + 5; i++) p.pick(`c${i}`, a, view({}));
    expect(p.pick('c0', a, view({}))?.publicKey).toBe('k2');
  });
});
