import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent } from '../../control/store/postgres-events.js';
import { describeTarget, parsePostgresUrl, SSL_MODES } from './postgres-url.js';

const word = fc.stringMatching(/^[a-z][a-z0-9_]{0,15}$/);

describe('parsePostgresUrl', () => {
  it('never throws; refusals are reasons', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `postgres://${s}`),
        ),
        (s) => {
          const r = parsePostgresUrl(s);
          if (!r.ok) expect(r.reason.length).toBeGreaterThan(0);
        },
      ),
    );
  });

  it('round-trips generated URLs through describeTarget', () => {
    fc.assert(
      fc.property(
        word,
        word,
        word,
        fc.integer({ min: 1, max: 65535 }),
        fc.option(fc.constantFrom(...SSL_MODES), { nil: null }),
        (user, host, database, port, sslmode) => {
          const url = `postgres://${user}@${host}:${port}/${database}${sslmode ? `?sslmode=${sslmode}` : ''}`;
          const r = parsePostgresUrl(url);
          expect(r).toEqual({ ok: true, target: { user, host, port, database, sslmode } });
          if (r.ok) expect(describeTarget(r.target)).toBe(`postgres://${user}@${host}:${port}/${database}`);
        },
      ),
    );
  });

  it('refuses every URL with a password and never repeats it', () => {
    fc.assert(
      fc.property(word, fc.stringMatching(/^[A-Za-z0-9]{6,20}$/), (user, password) => {
        const r = parsePostgresUrl(`postgres://${user}:${password}@host/db`);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.reason).not.toContain(password);
      }),
    );
  });
});

describe('change notification payloads', () => {
  it('round-trip, and anything else decodes to null without throwing', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (origin, id) => {
        expect(decodeEvent(encodeEvent({ origin, event: { kind: 'key-revoked', id } }))).toEqual({
          origin,
          event: { kind: 'key-revoked', id },
        });
      }),
    );
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (s) => {
        const r = decodeEvent(s);
        if (r !== null)
          expect(['key-revoked', 'cluster-deleted', 'cluster-denied', 'agent-unjoined']).toContain(
            r.event.kind,
          );
      }),
    );
    const kinds = fc.constantFrom(
      'cluster-deleted' as const,
      'cluster-denied' as const,
      'agent-unjoined' as const,
    );
    fc.assert(
      fc.property(fc.string(), kinds, fc.string(), fc.string(), (origin, kind, cluster, publicKey) => {
        const event = { kind, cluster, publicKey };
        expect(decodeEvent(encodeEvent({ origin, event }))).toEqual({ origin, event });
      }),
    );
    expect(decodeEvent(undefined)).toBeNull();
    expect(decodeEvent('{"o":"x","k":"cluster-denied","c":"y"}')).toBeNull();
    expect(decodeEvent('{"o":"x","k":"other","id":"y"}')).toBeNull();
  });
});
