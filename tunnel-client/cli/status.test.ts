import { describe, expect, it } from 'vitest';
import { type StatusReport, statusLines } from './status.js';

const report: StatusReport = {
  cluster: 'edge-1',
  status: 'Accepted',
  connected: true,
  path: 'relayed',
  pathDetail: {
    remote: null,
    rttDirectMs: null,
    rttRelayedMs: 12.499999999,
    lastSwitch: null,
    reason: '443-only',
  },
  rttMs: 2.5776009999990492,
  lastHandshake: null,
  bytesIn: 0,
  bytesOut: 0,
  values: {},
  relay: 'https://relay.example',
  stateDir: '/tmp/state',
  agentRunning: true,
  leaseRenewedAt: null,
  failures: 0,
  lastError: null,
  stopped: null,
  relayError: null,
  refreshError: null,
  updatedAt: null,
};

describe('tunnel-client status text', () => {
  it('prints round-trip times rounded: two decimals below 10 ms, whole above', () => {
    const lines = statusLines(report);
    expect(lines).toContain('rtt:            2.58 ms');
    expect(lines).toContain('path rtt:       direct -, relayed 12 ms');
    expect(lines.join('\n')).not.toMatch(/\d\.\d{3,}/);
  });
});
