import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LogCapture } from '../../test/helpers/test-relay.js';
import { createLogger, redactUrl } from './logger.js';
import { newSecret, redactSecrets, secretKind } from './secrets.js';

describe('log redaction', () => {
  it('redacts the token query parameter and secret-shaped strings in URLs', () => {
    const psk = newSecret('psk');
    expect(redactUrl(`/clusters/a?token=${psk}&source=x`)).toBe('/clusters/a?token=REDACTED&source=x');
    expect(redactUrl(`/clusters/a?source=x&TOKEN=abc`)).toBe('/clusters/a?source=x&TOKEN=REDACTED');
    expect(redactUrl(`/x/${psk}`)).not.toContain(psk.slice(5));
  });

  it('property: no generated secret survives redactSecrets or redactUrl', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('accessKey', 'psk', 'agent') as fc.Arbitrary<'accessKey' | 'psk' | 'agent'>,
        fc.string({ maxLength: 10 }),
        fc.string({ maxLength: 10 }),
        (kind, pre, post) => {
          const s = newSecret(kind);
          expect(secretKind(s)).toBe(kind);
          const body = s.slice(s.indexOf('_') + 1);
          expect(redactSecrets(`${pre} ${s} ${post}`)).not.toContain(body);
          expect(redactUrl(`/p?token=${encodeURIComponent(s)}`)).not.toContain(body);
        },
      ),
    );
  });

  it('censors credential headers and secret fields', () => {
    const out = new LogCapture();
    const log = createLogger('info', out);
    const key = newSecret('accessKey');
    log.info(
      { req: { method: 'GET', url: `/a?token=${key}`, headers: { authorization: `Bearer ${key}` } } },
      'r',
    );
    log.info({ psk: key, nested: { token: key, presharedKey: key } }, 'fields');
    log.info({ headers: { 'proxy-authorization': `Bearer ${key}` } }, 'proxy');
    expect(out.text).not.toContain(key.slice(4));
    expect(out.text).toContain('[REDACTED]');
  });
});
