import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bootstrapSecretProblem, checkBootstrapSecret } from './bootstrap-secret.js';

const b64url = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map((b) => Buffer.from(b).toString('base64url'));

describe('bootstrap secret shape', () => {
  it('accepts every PSK and bootstrap key the relay can issue', () => {
    fc.assert(
      fc.property(fc.constantFrom('tpsk_', 'trk_'), b64url, (prefix, body) => {
        expect(bootstrapSecretProblem(prefix + body)).toBeNull();
      }),
    );
    expect(bootstrapSecretProblem(`tpsk_${randomBytes(32).toString('base64url')}`)).toBeNull();
  });

  it('refuses any other string with BAD_INPUT that never quotes it', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        const valid = /^(tpsk_|trk_)[A-Za-z0-9_-]{43}$/.test(text);
        if (valid) return;
        expect(bootstrapSecretProblem(text)).not.toBeNull();
        try {
          checkBootstrapSecret(text, '--psk');
          expect.unreachable();
        } catch (e) {
          expect(e).toMatchObject({ code: 'BAD_INPUT' });
          if (text.length >= 6) expect(String((e as Error).message)).not.toContain(text);
        }
      }),
    );
  });

  it('names the length of a truncated PSK and a bad character', () => {
    expect(bootstrapSecretProblem(`tpsk_${'A'.repeat(40)}`)).toMatch(/43 characters .* has 40/);
    expect(bootstrapSecretProblem(`tpsk_${'A'.repeat(42)}=`)).toMatch(/base64url/);
    expect(bootstrapSecretProblem('tac_x')).toMatch(/does not start with tpsk_/);
  });
});
