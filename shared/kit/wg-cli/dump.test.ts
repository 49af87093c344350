import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { keyToBase64 } from '../../keys.js';
import { parseWgDump } from './dump.js';

// `wg show IF dump` from wireguard-go v0.0.20220316 + wireguard-tools v1.0.20210914 (throwaway keys).
const REAL_DUMP = [
  'IAPK6aMzOWQT/xUW6w5WgVBdaArju+Ne2lrZD+MKU00=\tuo4xMF6bsTZlEoYPvw6QvjrSoaCqwtqu0dFD40ZE2ms=\t51999\t0x1234',
  '0SMAZg0SBKGxPPpChhrABT+AHIZ+R4Zx5nfdGpsJe3I=\t(none)\t10.77.0.1:51900\t10.99.0.2/32,10.98.0.0/16\t0\t0\t0\t25',
  'Zm7FkB5xER0bIb6YE6LVhhSThiuy9kgiP4bIHW2tMRM=\tIAPK6aMzOWQT/xUW6w5WgVBdaArju+Ne2lrZD+MKU00=\t(none)\tfd00::/64\t0\t0\t0\toff',
  'I75QzcxVY8uieCOcrQVg75JsUTQJhxq2czi9Hf+1N2U=\t(none)\t[fd00::1]:51820\t(none)\t1795294522\t1234\t5678\toff',
  '',
].join('\n');

describe('parseWgDump', () => {
  it('parses a real dump, keeping no private or preshared key', () => {
    const d = parseWgDump(REAL_DUMP);
    expect(d.iface).toEqual({
      hasPrivateKey: true,
      publicKey: 'uo4xMF6bsTZlEoYPvw6QvjrSoaCqwtqu0dFD40ZE2ms=',
      listenPort: 51999,
      fwmark: 0x1234,
    });
    expect(d.peers).toEqual([
      {
        publicKey: '0SMAZg0SBKGxPPpChhrABT+AHIZ+R4Zx5nfdGpsJe3I=',
        hasPresharedKey: false,
        endpoint: '10.77.0.1:51900',
        allowedIps: ['10.99.0.2/32', '10.98.0.0/16'],
        latestHandshake: 0,
        rxBytes: 0,
        txBytes: 0,
        persistentKeepalive: 25,
      },
      {
        publicKey: 'Zm7FkB5xER0bIb6YE6LVhhSThiuy9kgiP4bIHW2tMRM=',
        hasPresharedKey: true,
        endpoint: null,
        allowedIps: ['fd00::/64'],
        latestHandshake: 0,
        rxBytes: 0,
        txBytes: 0,
        persistentKeepalive: null,
      },
      {
        publicKey: 'I75QzcxVY8uieCOcrQVg75JsUTQJhxq2czi9Hf+1N2U=',
        hasPresharedKey: false,
        endpoint: '[fd00::1]:51820',
        allowedIps: [],
        latestHandshake: 1795294522,
        rxBytes: 1234,
        txBytes: 5678,
        persistentKeepalive: null,
      },
    ]);
    expect(JSON.stringify(d)).not.toContain('IAPK6aMzOWQT');
  });

  it('parses an interface with nothing configured', () => {
    expect(parseWgDump('(none)\t(none)\t0\toff\n')).toEqual({
      iface: { hasPrivateKey: false, publicKey: null, listenPort: 0, fwmark: null },
      peers: [],
    });
  });

  it('round-trips generated dumps', () => {
    const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((k) => keyToBase64(k));
    const peer = fc.record({
      publicKey: key,
      psk: fc.option(key),
      endpoint: fc.option(fc.tuple(fc.ipV4(), fc.nat({ max: 65535 })).map(([h, p]) => `${h}:${p}`)),
      allowedIps: fc.array(
        fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([h, l]) => `${h}/${l}`),
        {
          maxLength: 4,
        },
      ),
      latestHandshake: fc.nat(),
      rxBytes: fc.nat(),
      txBytes: fc.nat(),
      persistentKeepalive: fc.option(fc.nat({ max: 65535 })),
    });
    fc.assert(
      fc.property(
        key,
        key,
        fc.nat({ max: 65535 }),
        fc.array(peer, { maxLength: 5 }),
        (priv, pub, port, peers) => {
          const text = [
            `${priv}\t${pub}\t${port}\toff`,
            ...peers.map((p) =>
              [
                p.publicKey,
                p.psk ?? '(none)',
                p.endpoint ?? '(none)',
                p.allowedIps.length ? p.allowedIps.join(',') : '(none)',
                p.latestHandshake,
                p.rxBytes,
                p.txBytes,
                p.persistentKeepalive ?? 'off',
              ].join('\t'),
            ),
          ].join('\n');
          const d = parseWgDump(text);
          expect(d.iface).toEqual({ hasPrivateKey: true, publicKey: pub, listenPort: port, fwmark: null });
          expect(d.peers).toEqual(
            peers.map((p) => ({
              publicKey: p.publicKey,
              hasPresharedKey: p.psk !== null,
              endpoint: p.endpoint,
              allowedIps: p.allowedIps,
              latestHandshake: p.latestHandshake,
              rxBytes: p.rxBytes,
              txBytes: p.txBytes,
              persistentKeepalive: p.persistentKeepalive,
            })),
          );
        },
      ),
    );
  });

  it('only ever throws WG_CLI_FAILED on arbitrary or damaged text, never quoting a key', () => {
    const check = (text: string): void => {
      try {
        parseWgDump(text);
      } catch (e) {
        expect(isTunnelError(e, 'WG_CLI_FAILED')).toBe(true);
        expect((e as Error).message).not.toContain('IAPK6aMzOWQT');
      }
    };
    fc.assert(fc.property(fc.string({ maxLength: 300 }), check));
    fc.assert(
      fc.property(
        fc.nat({ max: REAL_DUMP.length }),
        fc.nat({ max: REAL_DUMP.length - 1 }),
        fc.string({ maxLength: 3 }),
        (cut, at, ins) => {
          check(REAL_DUMP.slice(0, cut));
          check(REAL_DUMP.slice(0, at) + ins + REAL_DUMP.slice(at + 1));
        },
      ),
    );
    expect(() => parseWgDump('')).toThrow(/no interface line/);
    expect(() => parseWgDump('a\tb\n')).toThrow(/4/);
  });
});
