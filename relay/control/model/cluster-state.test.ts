import { describe, expect, it } from 'vitest';
import { clusterState } from './cluster-state.js';

describe('clusterState', () => {
  it('Connected when every agent has a session, Degraded when some do', () => {
    expect(clusterState({ agents: 1, connected: 1, everSeen: true })).toBe('Connected');
    expect(clusterState({ agents: 3, connected: 3, everSeen: true })).toBe('Connected');
    expect(clusterState({ agents: 3, connected: 1, everSeen: true })).toBe('Degraded');
  });

  it('Disconnected once an agent was seen, Never connected before', () => {
    expect(clusterState({ agents: 1, connected: 0, everSeen: true })).toBe('Disconnected');
    expect(clusterState({ agents: 1, connected: 0, everSeen: false })).toBe('Never connected');
    expect(clusterState({ agents: 0, connected: 0, everSeen: false })).toBe('Never connected');
  });
});
