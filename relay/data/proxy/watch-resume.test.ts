import { describe, expect, it } from 'vitest';
import { isWatchRequest, resumePath } from './watch-resume.js';

describe('watch resume paths', () => {
  it('knows a watch by its GET and its query', () => {
    expect(isWatchRequest('GET', '/api/v1/pods?watch=true&resourceVersion=5')).toBe(true);
    expect(isWatchRequest('GET', '/api/v1/pods?watch=1')).toBe(true);
    expect(isWatchRequest('GET', '/api/v1/pods?watch=false')).toBe(false);
    expect(isWatchRequest('GET', '/api/v1/pods?limit=500')).toBe(false);
    expect(isWatchRequest('POST', '/api/v1/pods?watch=true')).toBe(false);
  });

  it('reopens at the last version, as a plain watch', () => {
    expect(
      resumePath(
        '/api/v1/namespaces/a/pods?watch=true&resourceVersion=5&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=300',
        '42',
      ),
    ).toBe('/api/v1/namespaces/a/pods?watch=true&resourceVersion=42&timeoutSeconds=300');
    expect(resumePath('/api/v1/pods?watch=1', null)).toBe('/api/v1/pods?watch=1');
  });
});
