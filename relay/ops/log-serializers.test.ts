import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TunnelError } from '../../shared/errors.js';
import { LogCapture } from '../../test/helpers/test-relay.js';
import { serializeErr, serializeReq } from './log-serializers.js';
import { createLogger } from './logger.js';
import { newSecret, type SecretKind } from './secrets.js';

const secretArb = fc.constantFrom<SecretKind>('accessKey', 'psk', 'agent').map((k) => newSecret(k));

/** A value built around `secret`: Errors, strings, plain, circular and hostile objects, primitives. */
function hostile(secret: string): fc.Arbitrary<unknown> {
  const circular = (): unknown => {
    const o: Record<string, unknown> = { message: `failed with ${secret}`, token: secret };
    o.self = o;
    return o;
  };
  const throwing = {
    get message(): string {
      throw new Error(secret);
    },
    get name(): string {
      throw new Error(secret);
    },
  };
  const proxy = new Proxy(
    {},
    {
      get() {
        throw new Error(secret);
      },
    },
  );
  const withCode = Object.assign(new Error(`dial ${secret}`), { code: `E_${secret}`, statusCode: 502 });
  return fc.oneof(
    fc.anything(),
    fc.constantFrom(
      undefined,
      null,
      secret,
      `Cannot use ${secret}`,
      new Error(`bad ${secret}`),
      new TunnelError('BAD_INPUT', `value ${secret}`),
      withCode,
      circular(),
      throwing,
      proxy,
      Object.create(null),
      () => secret,
      Symbol(secret),
      12n,
      { name: secret, message: 7, stack: [secret] },
    ),
  );
}

describe('log serializers are total', () => {
  it('property: serializeErr and serializeReq never throw, return JSON, and never carry a secret', () => {
    fc.assert(
      fc.property(
        secretArb.chain((s) => fc.tuple(fc.constant(s), hostile(s))),
        ([secret, value]) => {
          const body = secret.slice(secret.indexOf('_') + 1);
          for (const out of [serializeErr(value), serializeReq(value)]) {
            const json = JSON.stringify(out);
            expect(json).not.toContain(body);
          }
          expect(typeof serializeErr(value).message).toBe('string');
          expect(typeof serializeReq(value).url).toBe('string');
        },
      ),
      { numRuns: 400 },
    );
  });

  it('keeps what an Error says: type, code, status, message and stack', () => {
    const e = new TunnelError('KEY_UNUSABLE', 'publicKey AAAA is a low-order point');
    expect(serializeErr(e)).toMatchObject({
      type: 'TunnelError',
      code: 'KEY_UNUSABLE',
      message: 'publicKey AAAA is a low-order point',
    });
    expect(serializeErr(e).stack).toContain('low-order');
    expect(serializeErr('peer public key is not usable')).toEqual({
      type: 'string',
      message: 'peer public key is not usable',
    });
    expect(serializeErr(undefined)).toEqual({ type: 'undefined', message: '' });
    expect(serializeReq({ method: 'GET', url: '/a?%74oken=x', ip: '10.0.0.1' })).toEqual({
      method: 'GET',
      url: '/a?%74oken=REDACTED',
      remoteAddress: '10.0.0.1',
    });
  });

  it('property: a log call through the real logger never throws and never writes a secret', () => {
    const out = new LogCapture();
    const log = createLogger('info', out);
    fc.assert(
      fc.property(
        secretArb.chain((s) => fc.tuple(fc.constant(s), hostile(s))),
        ([secret, value]) => {
          out.chunks.length = 0;
          log.warn({ cluster: 'c1', err: value }, 'hub: agent record unusable');
          log.info({ req: value }, 'incoming request');
          expect(out.text).not.toContain(secret.slice(secret.indexOf('_') + 1));
          expect(out.text).toContain('hub: agent record unusable');
        },
      ),
      { numRuns: 200 },
    );
  });
});
