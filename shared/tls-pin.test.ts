import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from './errors.js';
import { checkPin, parseCaPin, pinOfCertificate } from './tls-pin.js';

const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));

describe('parseCaPin', () => {
  it('accepts sha256:<hex> in any case and with colon pairs, returning one canonical form', () => {
    fc.assert(
      fc.property(hex64, fc.boolean(), fc.boolean(), (hex, upper, colons) => {
        let body = colons ? hex.match(/../g)!.join(':') : hex;
        if (upper) body = body.toUpperCase();
        expect(parseCaPin(`${upper ? 'SHA256:' : 'sha256:'}${body}`)).toBe(`sha256:${hex}`);
      }),
    );
  });

  it('rejects anything else with BAD_INPUT naming the value', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (s) => {
        const ok = /^sha256:([0-9a-f]{64}|[0-9a-f]{2}(:[0-9a-f]{2}){31})$/.test(s.trim().toLowerCase());
        try {
          parseCaPin(s);
          expect(ok).toBe(true);
        } catch (err) {
          expect(ok).toBe(false);
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        }
      }),
    );
    expect(() => parseCaPin('sha1:abcd')).toThrow(/sha1:abcd/);
  });
});

describe('checkPin', () => {
  it('passes exactly when the DER hashes to the pin', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        (a, b) => {
          const pin = pinOfCertificate(a);
          expect(() => checkPin(pin, a, 'relay')).not.toThrow();
          const same = Buffer.from(a).equals(Buffer.from(b));
          if (!same) expect(() => checkPin(pin, b, 'relay')).toThrow(/CA|pin/);
        },
      ),
    );
    try {
      checkPin(pinOfCertificate(Buffer.from('x')), undefined, 'relay 1.2.3.4:1');
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'CA_PIN_MISMATCH')).toBe(true);
    }
  });
});
