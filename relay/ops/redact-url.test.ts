import fc from 'fast-check';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeQueryName, redactUrl, SECRET_QUERY_PARAMS } from './redact-url.js';
import { newSecret } from './secrets.js';

/** Every way a query parser reads `ch`: itself, either case where it is a letter, a percent escape in either case. */
function encodings(ch: string): fc.Arbitrary<string> {
  const hex = ch.charCodeAt(0).toString(16).padStart(2, '0');
  return fc.constantFrom(ch, ch.toUpperCase(), `%${hex.toLowerCase()}`, `%${hex.toUpperCase()}`);
}

/** A secret parameter name, each character encoded its own way, with optional `+` (space) around it. */
const encodedSecretName = fc
  .constantFrom(...SECRET_QUERY_PARAMS)
  .chain((name) =>
    fc.tuple(
      fc.constantFrom('', '+', '%20'),
      fc.tuple(...[...name].map(encodings)).map((parts) => parts.join('')),
      fc.constantFrom('', '+', '%20'),
    ),
  )
  .map((parts) => parts.join(''));

/** A value with every character raw or percent-escaped (`&` always escaped: raw it ends the parameter). */
function encodedValue(value: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      ...[...value].map((ch) => {
        const esc = `%${ch.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`;
        return ch === '&' ? fc.constant(esc) : fc.constantFrom(ch, esc);
      }),
    )
    .map((parts) => parts.join(''));
}

const QUERY_CHARS = [...'tokenpsaciv_ATOKENPS0123456789%+=&.-'];
const queryText = fc.string({ unit: fc.constantFrom(...QUERY_CHARS), maxLength: 60 });

describe('redactUrl', () => {
  it('redacts by the decoded parameter name, in any case and any encoding', () => {
    const key = newSecret('accessKey');
    for (const name of ['token', '%74oken', 'T%4fKEN', '%54%4F%4B%45%4E', '+token', 'access_token', 'psk']) {
      expect(redactUrl(`/v/clusters/a?source=x&${name}=${key}`)).toBe(
        `/v/clusters/a?source=x&${name}=REDACTED`,
      );
    }
    expect(redactUrl('/a?token=%74rk_secretvalue&b=1')).toBe('/a?token=REDACTED&b=1');
    expect(redactUrl('/a?tokens=x&b=token')).toBe('/a?tokens=x&b=token');
  });

  it('never throws on malformed escapes, and decodes the well-formed ones beside them', () => {
    expect(decodeQueryName('%74oken%')).toBe('token%');
    expect(decodeQueryName('%E0%A4%A')).toBe('%E0%A4%A'.replace('%E0', '\u00e0').replace('%A4', '\u00a4'));
    expect(redactUrl('/a?%74oken=abc&%zz=1&%=2&token%=3')).toBe('/a?%74oken=REDACTED&%zz=1&%=2&token%=3');
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (s) => {
        expect(typeof redactUrl(s)).toBe('string');
        expect(typeof redactUrl(`/p?${s}`)).toBe('string');
      }),
    );
  });

  it('property: the secret never appears in the logged URL, whatever the encoding of name and value', () => {
    const secret = fc.oneof(
      fc
        .constantFrom('accessKey', 'psk', 'agent')
        .map((kind) => newSecret(kind as 'accessKey' | 'psk' | 'agent')),
      fc.string({ minLength: 12, maxLength: 40, unit: fc.constantFrom(...'abcdefXYZ0189_-~.&=+%#/') }),
    );
    fc.assert(
      fc.property(
        encodedSecretName,
        secret.chain((s) => fc.tuple(fc.constant(s), encodedValue(s))),
        queryText,
        queryText.filter((t) => !t.startsWith('=')),
        (name, [value, encoded], before, after) => {
          const logged = redactUrl(`/v1/values/clusters/c?${before}&${name}=${encoded}&${after}`);
          expect(logged).not.toContain(encoded);
          expect(logged).not.toContain(value);
        },
      ),
      { numRuns: 500 },
    );
  });

  describe('against the query parser the relay runs (Fastify)', () => {
    const app = Fastify();
    app.get('/q', async (req) => req.query);
    beforeAll(() => app.ready());
    afterAll(() => app.close());

    const parsed = async (url: string): Promise<Record<string, string | string[]>> =>
      (await app.inject({ method: 'GET', url })).json();

    it('property: after redaction the parser finds no secret-named parameter with a value', async () => {
      const segment = fc.oneof(
        queryText,
        fc.tuple(encodedSecretName, queryText).map(([n, v]) => `${n}=${v.replaceAll('&', '%26')}`),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { maxLength: 6 }), async (segments) => {
          const url = `/q?${segments.join('&')}`;
          const before = await parsed(url);
          const after = await parsed(redactUrl(url));
          for (const [k, v] of Object.entries(after)) {
            if (!SECRET_QUERY_PARAMS.has(k.trim().toLowerCase())) continue;
            for (const one of [v].flat()) expect(['REDACTED', '']).toContain(one);
          }
          // Redaction changes values only: the parser sees the same parameter names.
          expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
        }),
        { numRuns: 300 },
      );
    });
  });
});
