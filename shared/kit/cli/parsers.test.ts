import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import {
  collectClaims,
  MAX_CLAIMS,
  parseClaim,
  parseClusterName,
  parseHostPort,
  parsePortOrOff,
  parseRelayUrl,
  parseRole,
} from './parsers.js';

function fails(fn: () => unknown, code: string): string {
  try {
    fn();
  } catch (err) {
    expect(isTunnelError(err), String(err)).toBe(true);
    expect((err as { code: string }).code).toBe(code);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a failure');
}

const labelChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'.split(''));
const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split(''));
const label = fc
  .tuple(alnum, fc.array(labelChar, { maxLength: 61 }), alnum)
  .map(([a, mid, b]) => a + mid.join('') + b);

describe('parseClusterName', () => {
  it('accepts every DNS-1123 label', () => {
    fc.assert(
      fc.property(label, (n) => {
        expect(parseClusterName(n)).toBe(n);
      }),
    );
    expect(parseClusterName('a')).toBe('a');
  });

  it('rejects anything that is not a label with INVALID_NAME naming the value', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const valid = s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s);
        if (valid) expect(parseClusterName(s)).toBe(s);
        else expect(fails(() => parseClusterName(s), 'INVALID_NAME')).toContain(JSON.stringify(s));
      }),
    );
    fails(() => parseClusterName('Edge_1'), 'INVALID_NAME');
    fails(() => parseClusterName('-edge'), 'INVALID_NAME');
    fails(() => parseClusterName('a'.repeat(64)), 'INVALID_NAME');
  });
});

describe('parseClaim', () => {
  const key = fc
    .tuple(alnum, fc.array(fc.constantFrom(...'abcXYZ09._/-'.split('')), { maxLength: 20 }), alnum)
    .map(([a, m, b]) => a + m.join('') + b);

  it('splits KEY=VALUE at the first = and round-trips', () => {
    fc.assert(
      fc.property(key, fc.string({ maxLength: 200 }), (k, v) => {
        expect(parseClaim(`${k}=${v}`)).toEqual([k, v]);
      }),
    );
  });

  it('rejects a missing or bad key', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }).filter((s) => !s.includes('=')),
        (s) => {
          fails(() => parseClaim(s), 'BAD_INPUT');
        },
      ),
    );
    expect(fails(() => parseClaim('=v'), 'BAD_INPUT')).toContain('"=v"');
    fails(() => parseClaim('-a=v'), 'BAD_INPUT');
    fails(() => parseClaim(`k=${'x'.repeat(1025)}`), 'BAD_INPUT');
  });

  it('collects repeated claims, later wins, with a cap', () => {
    expect(collectClaims(['a=1', 'b=2', 'a=3'])).toEqual({ a: '3', b: '2' });
    const many = Array.from({ length: MAX_CLAIMS + 1 }, (_, i) => `k${i}=v`);
    fails(() => collectClaims(many), 'BAD_INPUT');
  });
});

describe('parseHostPort', () => {
  it('accepts IPv4, names and bracketed IPv6 with ports 1-65535', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.integer({ min: 1, max: 65535 }), (ip, port) => {
        expect(parseHostPort(`${ip}:${port}`, '--allow')).toEqual({ host: ip, port });
      }),
    );
    fc.assert(
      fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), (d, port) => {
        expect(parseHostPort(`${d}:${port}`, '--allow')).toEqual({ host: d, port });
      }),
    );
    expect(parseHostPort('[::1]:443', '--allow')).toEqual({ host: '::1', port: 443 });
    expect(parseHostPort('127.0.0.1:0', '--listen', true)).toEqual({ host: '127.0.0.1', port: 0 });
  });

  it('rejects bad ports and hosts', () => {
    for (const bad of [
      'host',
      'host:',
      ':80',
      'host:0',
      'host:65536',
      'host:-1',
      '999.1.1.1:80',
      '[::1]80',
      'a b:80',
      'h:8x',
      'A:01',
      'host:00080',
    ]) {
      expect(fails(() => parseHostPort(bad, '--allow'), 'BAD_INPUT')).toContain('--allow');
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        try {
          const hp = parseHostPort(s, '--allow');
          expect(hp.port).toBeGreaterThan(0);
          expect(s.endsWith(`:${hp.port}`)).toBe(true);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        }
      }),
    );
  });
});

describe('parseRelayUrl, parsePortOrOff, parseRole', () => {
  it('accepts https URLs only, without credentials or query', () => {
    expect(parseRelayUrl('https://relay.example:8443/')).toBe('https://relay.example:8443');
    expect(parseRelayUrl('https://127.0.0.1:1')).toBe('https://127.0.0.1:1');
    for (const bad of [
      'relay.example',
      'http://relay.example',
      'https://u:p@relay',
      'https://r/?x=1',
      'ftp://x',
    ]) {
      fails(() => parseRelayUrl(bad), 'BAD_INPUT');
    }
  });

  it('ports or off', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 65535 }), (p) => {
        expect(parsePortOrOff(String(p), '--udp-port')).toBe(p);
      }),
    );
    expect(parsePortOrOff('off', '--udp-port')).toBe('off');
    for (const bad of ['65536', 'on', '', '1.5', '-1'])
      fails(() => parsePortOrOff(bad, '--udp-port'), 'BAD_INPUT');
  });

  it('roles', () => {
    for (const r of ['admin', 'viewer', 'bootstrap', 'group-editor:team-a']) expect(parseRole(r)).toBe(r);
    for (const r of ['root', 'group-editor:', 'group-editor:Team', 'admin '])
      fails(() => parseRole(r), 'BAD_INPUT');
  });
});

describe('parseRelayUrl (property)', () => {
  it('accepts generated https URLs without query/fragment/credentials, and never throws anything but BAD_INPUT', () => {
    fc.assert(
      fc.property(
        fc.webUrl({ validSchemes: ['https'], withQueryParameters: false, withFragments: false }),
        (u) => {
          const out = parseRelayUrl(u);
          expect(out.startsWith('https://')).toBe(true);
          expect(out.endsWith('/')).toBe(false);
          expect(new URL(out).host).toBe(new URL(u).host);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        try {
          const out = parseRelayUrl(s);
          expect(new URL(out).protocol).toBe('https:');
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
          expect((err as Error).message).not.toContain('\n');
        }
      }),
    );
  });
});
