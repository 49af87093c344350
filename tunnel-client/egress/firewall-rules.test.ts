import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveProxySettings } from '../../shared/kit/proxy/proxy-config.js';
import { type Destination, listDestinations } from './destinations.js';
import { firewallRules } from './firewall-rules.js';

const noProxy = resolveProxySettings({ env: {} });

describe('firewallRules', () => {
  it('folds the relay TCP port into one rule; each UDP port is its own', () => {
    const ds = listDestinations({
      relayUrl: 'https://relay.example:8443',
      udpEndpoint: 'relay.example:51820',
      stunEndpoint: 'relay.example:3478',
      egress: 'auto',
      proxy: noProxy,
    });
    expect(firewallRules(ds)).toEqual([
      {
        protocol: 'tcp',
        host: 'relay.example',
        port: 8443,
        purposes: ['registration', 'values', 'lease', 'relay (DERP)'],
        proxy: null,
      },
      { protocol: 'udp', host: 'relay.example', port: 3478, purposes: ['STUN'], proxy: null },
      { protocol: 'udp', host: 'relay.example', port: 51820, purposes: ['direct WireGuard'], proxy: null },
    ]);
  });

  it('covers every destination exactly once, with no two rules alike', () => {
    const dest = fc.record({
      host: fc.constantFrom('a', 'b'),
      port: fc.constantFrom(1, 2),
      protocol: fc.constantFrom<'tcp' | 'udp'>('tcp', 'udp'),
      purpose: fc.constantFrom('registration', 'STUN', 'lease'),
      viaProxy: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(dest, { maxLength: 12 }), (ds) => {
        const rules = firewallRules(ds as Destination[]);
        const keys = rules.map((r) => `${r.protocol} ${r.host} ${r.port}`);
        expect(new Set(keys).size).toBe(keys.length);
        for (const d of ds) {
          const r = rules.find((x) => x.protocol === d.protocol && x.host === d.host && x.port === d.port);
          expect(r?.purposes).toContain(d.purpose);
        }
      }),
    );
  });
});
