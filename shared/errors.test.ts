import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode, isTunnelError, needBytes, TunnelError } from './errors.js';

const docs = readFileSync(new URL('../docs/ERRORS.md', import.meta.url), 'utf8');

function documentedCodes(): Map<string, number> {
  const rows = new Map<string, number>();
  for (const m of docs.matchAll(/^\|\s*`([A-Z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm)) rows.set(m[1]!, Number(m[2]));
  return rows;
}

describe('error codes', () => {
  it('docs/ERRORS.md lists exactly the codes in the table, with the same statuses', () => {
    const documented = documentedCodes();
    const table = new Map(Object.entries(ERROR_CODES).map(([code, info]) => [code, info.status]));
    expect([...documented.keys()].sort()).toEqual([...table.keys()].sort());
    for (const [code, status] of table) expect(documented.get(code), code).toBe(status);
  });

  it('serialises as the API error body', () => {
    const err = new TunnelError('INVALID_NAME', 'cluster name "Bad_Name" is not a DNS-1123 label');
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      error: { code: 'INVALID_NAME', message: 'cluster name "Bad_Name" is not a DNS-1123 label' },
    });
    expect(err.status).toBe(400);
    expect(isTunnelError(err, 'INVALID_NAME')).toBe(true);
    expect(isTunnelError(err, 'NOT_FOUND')).toBe(false);
    expect(isTunnelError(new Error('x'))).toBe(false);
  });

  it('needBytes names what was short', () => {
    expect(() => needBytes(Buffer.alloc(3), 4, 'header')).toThrow(/header: need 4 bytes, have 3/);
    try {
      needBytes(Buffer.alloc(0), 1, 'x');
    } catch (e) {
      expect((e as TunnelError).code satisfies ErrorCode).toBe('WIRE_TRUNCATED');
    }
    expect(() => needBytes(Buffer.alloc(4), 4, 'header')).not.toThrow();
  });
});
