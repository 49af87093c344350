import { describe, expect, it } from 'vitest';
import { when } from './format.js';
import { sessionSummary } from './session-summary.js';

describe('sessionSummary', () => {
  it('reads who, which pod and command, when, bytes and how the session ended', () => {
    const d = {
      role: 'viewer',
      namespace: 'default',
      pod: 'web-1',
      container: 'app',
      command: ['sh', '-c', 'ls'],
      startedAt: '2026-01-02T03:04:05.000Z',
      endedAt: '2026-01-02T03:04:09.000Z',
      bytesIn: 12,
      bytesOut: 340,
      exitReason: 'refused (HTTP 403)',
    };
    expect(sessionSummary(d)).toBe(
      `as viewer on default/web-1 (app): sh -c ls; ${when(d.startedAt)} to ${when(d.endedAt)}; 12 B in, 340 B out; ` +
        'refused (HTTP 403)',
    );
    expect(sessionSummary({ ...d, command: undefined, ports: ['8080'], container: null })).toContain(
      'on default/web-1: ports 8080;',
    );
    expect(sessionSummary(null)).toBe('');
  });
});
