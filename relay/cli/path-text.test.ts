import { describe, expect, it } from 'vitest';
import { formatRtt, pathCell, pathLines, pathListCell } from './path-text.js';

const now = Date.parse('2026-11-25T12:00:00Z');
const detail = {
  remote: '198.51.100.7:41641',
  rttDirectMs: 0.4123,
  rttRelayedMs: 12.6,
  lastSwitch: '2026-11-25T11:58:00.000Z',
  reason: null,
};

describe('path text', () => {
  it('the PATH cell shows the RTT of the path in use', () => {
    expect(pathCell({ path: 'direct', pathDetail: detail })).toBe('direct 0.41 ms');
    expect(pathCell({ path: 'relayed', pathDetail: { ...detail, rttDirectMs: null } })).toBe('relayed 13 ms');
    expect(pathCell({ path: 'relayed', rttMs: 3.2, pathDetail: null })).toBe('relayed 3.20 ms');
    expect(pathCell({ path: 'none', rttMs: null })).toBe('none');
    expect(pathCell({})).toBe('none');
  });

  it('cluster get lines: remote, both RTTs, the last switch and why relayed', () => {
    expect(pathLines({ pathDetail: detail }, now)).toEqual([
      'path remote:   198.51.100.7:41641',
      'path rtt:      direct 0.41 ms, relayed 13 ms',
      'path switched: 2026-11-25T11:58:00.000Z (2m ago)',
    ]);
    const relayed = { ...detail, remote: null, rttDirectMs: null, reason: 'direct-silent' };
    expect(pathLines({ pathDetail: relayed }, now)).toEqual([
      'path remote:   -',
      'path rtt:      relayed 13 ms',
      'path switched: 2026-11-25T11:58:00.000Z (2m ago)',
      'relayed why:   direct-silent (the direct path went silent; probing in the background)',
    ]);
    expect(pathLines({ pathDetail: null }, now)).toEqual([]);
  });

  it('says who reported the reason, and the list cell carries the code while relayed', () => {
    const byAgent = { ...detail, remote: null, reason: '443-only', reasonFrom: 'agent' as const };
    expect(pathLines({ pathDetail: byAgent }, now).at(-1)).toBe(
      'relayed why:   443-only (--egress 443-only: no UDP at all), reported by the agent',
    );
    const byHub = { ...detail, reason: 'no-candidates', reasonFrom: 'hub' as const };
    expect(pathLines({ pathDetail: byHub }, now).at(-1)).toBe(
      'relayed why:   no-candidates (the peer sent no addresses to try), reported by the hub',
    );
    expect(pathListCell({ path: 'relayed', pathDetail: byAgent })).toBe('relayed 13 ms (443-only)');
    expect(pathListCell({ path: 'direct', pathDetail: detail })).toBe('direct 0.41 ms');
    expect(pathListCell({ path: 'none' })).toBe('none');
  });

  it('formats RTTs', () => {
    expect(formatRtt(0)).toBe('0.00 ms');
    expect(formatRtt(9.999)).toBe('10.00 ms');
    expect(formatRtt(250.4)).toBe('250 ms');
  });
});
