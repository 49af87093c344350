import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_CONNECTIONS,
  defaultMaxConnections,
  MIN_MAX_CONNECTIONS,
  openFilesWarning,
} from '../config/http-limits.js';
import { parseOpenFileLimit } from './open-file-limit.js';

const line = (soft: string, hard: string) =>
  `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `;

describe('open-file limit', () => {
  it('reads the soft limit of the "Max open files" line', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 }),
        fc.integer({ min: 1, max: 2 ** 31 }),
        (soft, hard) => {
          const text = [
            'Limit                     Soft Limit           Hard Limit           Units     ',
            'Max processes             63704                63704                processes ',
            line(String(soft), String(hard)),
            'Max locked memory         8388608              8388608              bytes     ',
          ].join('\n');
          expect(parseOpenFileLimit(text)).toBe(soft);
        },
      ),
    );
    expect(parseOpenFileLimit(line('unlimited', 'unlimited'))).toBeNull();
    expect(parseOpenFileLimit('')).toBeNull();
  });

  it('never throws on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        const n = parseOpenFileLimit(text);
        expect(n === null || (Number.isInteger(n) && n > 0)).toBe(true);
      }),
    );
  });

  it('the default total cap fits the limit, within its floor and ceiling', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (limit) => {
        const cap = defaultMaxConnections(limit);
        expect(cap).toBeGreaterThanOrEqual(MIN_MAX_CONNECTIONS);
        expect(cap).toBeLessThanOrEqual(DEFAULT_MAX_CONNECTIONS);
        if (limit > DEFAULT_MAX_CONNECTIONS + 64) expect(cap).toBe(DEFAULT_MAX_CONNECTIONS);
        else if (limit - 64 >= MIN_MAX_CONNECTIONS) expect(cap).toBe(limit - 64);
      }),
    );
    expect(defaultMaxConnections(null)).toBe(DEFAULT_MAX_CONNECTIONS);
    expect(defaultMaxConnections(256)).toBe(192);
  });

  it('warns when a configured cap leaves fewer than 64 descriptors free, and says what fits', () => {
    expect(openFilesWarning(1_000, 2_000)).toBeNull();
    expect(openFilesWarning(1_936, 2_000)).toBeNull();
    expect(openFilesWarning(1_937, 2_000)).toBe(
      '--max-connections 1937 is over the open-file limit 2000 less 64: raise the limit (ulimit -n, LimitNOFILE) ' +
        'or lower --max-connections to 1936',
    );
    expect(openFilesWarning(1_000_000, null)).toBeNull();
  });
});
