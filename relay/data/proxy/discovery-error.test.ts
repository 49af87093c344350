import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { discoveryErrorAnswer, isDiscoveryRequest } from './discovery-error.js';

describe('discovery requests', () => {
  it('are GETs of /api, /apis and /version only', () => {
    expect(isDiscoveryRequest('GET', '/api')).toBe(true);
    expect(isDiscoveryRequest('GET', '/apis?timeout=32s')).toBe(true);
    expect(isDiscoveryRequest('GET', '/version?timeout=32s')).toBe(true);
    expect(isDiscoveryRequest('GET', '/api/v1/pods')).toBe(false);
    expect(isDiscoveryRequest('POST', '/api')).toBe(false);
    fc.assert(
      fc.property(fc.string(), (path) => {
        const base = path.split('?')[0];
        expect(isDiscoveryRequest('GET', path)).toBe(
          ['/api', '/api/', '/apis', '/apis/', '/version', '/version/'].includes(base ?? ''),
        );
      }),
    );
  });

  it('server-side failures become 502 plain text on one line; client errors stay as they are', () => {
    expect(discoveryErrorAnswer(503, 'agent for cluster a is not connected')).toEqual({
      status: 502,
      body: 'agent for cluster a is not connected\n',
    });
    expect(discoveryErrorAnswer(404, 'no such cluster')).toBeNull();
    fc.assert(
      fc.property(fc.integer({ min: 500, max: 599 }), fc.string(), (status, message) => {
        const a = discoveryErrorAnswer(status, message);
        expect(a?.status).toBe(502);
        expect(a?.body.slice(0, -1)).not.toMatch(/[\n\r]/);
      }),
    );
  });
});
