import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveRelayConfig } from './config.js';
import { parseUdpPublicEndpoint } from './public-endpoint.js';

const bad = expect.objectContaining({
  code: 'BAD_CONFIG',
  message: expect.stringContaining('udp-public-endpoint (--udp-public-endpoint)'),
});

describe('parseUdpPublicEndpoint', () => {
  it('takes names, IPv4 and bracketed IPv6 and gives them back as agents get them', () => {
    expect(parseUdpPublicEndpoint('relay.Example.com:51820', 'x')).toBe('relay.example.com:51820');
    expect(parseUdpPublicEndpoint('203.0.113.7:4500', 'x')).toBe('203.0.113.7:4500');
    expect(parseUdpPublicEndpoint('[2001:DB8::1]:1', 'x')).toBe('[2001:db8::1]:1');
  });

  it('refuses what agents could not dial, naming the flag and the value', () => {
    for (const v of [
      'relay:0',
      'relay:65536',
      'relay',
      ':51820',
      '2001:db8::1:5',
      '[relay]:5',
      '300.1.1.1:5',
      '-a.b:5',
      'a b:5',
      7,
    ]) {
      expect(() => parseUdpPublicEndpoint(v, '--udp-public-endpoint'), String(v)).toThrow(bad);
    }
  });

  it('property: any output parses again to itself; anything else is BAD_CONFIG, never another error', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        let out: string;
        try {
          out = parseUdpPublicEndpoint(s, '--udp-public-endpoint');
        } catch (err) {
          expect(err).toEqual(bad);
          return;
        }
        expect(parseUdpPublicEndpoint(out, '--udp-public-endpoint')).toBe(out);
      }),
    );
    fc.assert(
      fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), (host, port) => {
        expect(parseUdpPublicEndpoint(`${host}:${port}`, 'x')).toBe(`${host.toLowerCase()}:${port}`);
      }),
    );
  });
});

describe('--udp-public-endpoint in the relay configuration', () => {
  it('is parsed from flags and env, and refused while --udp-port is off', () => {
    expect(resolveRelayConfig({ flags: { udpPublicEndpoint: 'WG.example:4500' } }).udpPublicEndpoint).toBe(
      'wg.example:4500',
    );
    expect(
      resolveRelayConfig({ env: { TUNNEL_RELAY_UDP_PUBLIC_ENDPOINT: '[::1]:9' } }).udpPublicEndpoint,
    ).toBe('[::1]:9');
    expect(resolveRelayConfig({}).udpPublicEndpoint).toBeNull();
    expect(() => resolveRelayConfig({ flags: { udpPort: 'off', udpPublicEndpoint: 'a:1' } })).toThrow(
      expect.objectContaining({
        code: 'BAD_CONFIG',
        message: expect.stringContaining('udp-public-endpoint (--udp-public-endpoint)'),
      }),
    );
  });
});
