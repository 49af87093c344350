import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveRelayConfig } from './config.js';
import { MAX_STUN_SERVERS, parseStunServers } from './stun-servers.js';

const bad = (text: string) =>
  expect.objectContaining({ code: 'BAD_CONFIG', message: expect.stringContaining(text) });

describe('--stun-server', () => {
  it('takes repeated flags, a comma-separated environment value and a YAML list', () => {
    expect(parseStunServers(['stun.Example.net:3478', '[2001:DB8::1]:19302'], '--stun-server')).toEqual([
      'stun.example.net:3478',
      '[2001:db8::1]:19302',
    ]);
    expect(parseStunServers('198.51.100.1:3478, 198.51.100.2:3478', 'TUNNEL_RELAY_STUN_SERVER')).toEqual([
      '198.51.100.1:3478',
      '198.51.100.2:3478',
    ]);
    const config = resolveRelayConfig({
      flags: { stunServer: ['198.51.100.1:3478', '198.51.100.2:3478'] },
    });
    expect(config.stunServers).toEqual(['198.51.100.1:3478', '198.51.100.2:3478']);
    expect(resolveRelayConfig({}).stunServers).toEqual([]);
    expect(resolveRelayConfig({ env: { TUNNEL_RELAY_STUN_SERVER: 'stun:1' } }).stunServers).toEqual([
      'stun:1',
    ]);
  });

  it('refuses a bad value, a duplicate, too many, or any without the UDP port, naming the value', () => {
    expect(() => parseStunServers(['stun'], '--stun-server')).toThrow(bad('stun-server (--stun-server)'));
    expect(() => parseStunServers(['stun:0'], '--stun-server')).toThrow(bad('"stun:0"'));
    expect(() => parseStunServers(['a:1', 'A:1'], '--stun-server')).toThrow(bad('"a:1" given twice'));
    const many = Array.from({ length: MAX_STUN_SERVERS + 1 }, (_, i) => `s${i}:3478`);
    expect(() => parseStunServers(many, '--stun-server')).toThrow(bad(`at most ${MAX_STUN_SERVERS}`));
    expect(() => resolveRelayConfig({ flags: { stunServer: ['s:1'], udpPort: 'off' } })).toThrow(
      bad('stun-server (--stun-server): only applies while --udp-port is on'),
    );
    expect(() => resolveRelayConfig({ env: { TUNNEL_RELAY_STUN_SERVER: 'x:99999' } })).toThrow(
      bad('stun-server (TUNNEL_RELAY_STUN_SERVER)'),
    );
  });

  it('property: any accepted list parses again to itself; anything else is BAD_CONFIG, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 60 }), fc.array(fc.string({ maxLength: 30 }))), (v) => {
        let out: string[];
        try {
          out = parseStunServers(v, 'x');
        } catch (err) {
          expect(err).toEqual(bad('stun-server (x)'));
          return;
        }
        expect(parseStunServers(out, 'x')).toEqual(out);
      }),
    );
  });
});
