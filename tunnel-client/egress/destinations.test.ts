import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveProxySettings } from '../../shared/kit/proxy/proxy-config.js';
import { checkDestination } from './check.js';
import { type Destination, derpUrlFor, listDestinations, splitEndpoint } from './destinations.js';

const none = resolveProxySettings({ env: {} });
const proxied = resolveProxySettings({ env: { HTTPS_PROXY: 'http://u:pw@proxy:3128' } });

describe('listDestinations', () => {
  it('443-only: the four TCP uses of the relay, via the proxy when one applies', () => {
    const ds = listDestinations({
      relayUrl: 'https://relay.example',
      udpEndpoint: 'relay.example:51820',
      egress: '443-only',
      proxy: proxied,
    });
    expect(ds.map((d) => [d.purpose, d.host, d.port, d.protocol, d.viaProxy, d.proxy])).toEqual([
      ['registration', 'relay.example', 443, 'tcp', true, 'http://u:***@proxy:3128'],
      ['values', 'relay.example', 443, 'tcp', true, 'http://u:***@proxy:3128'],
      ['lease', 'relay.example', 443, 'tcp', true, 'http://u:***@proxy:3128'],
      ['relay (DERP)', 'relay.example', 443, 'tcp', true, 'http://u:***@proxy:3128'],
    ]);
    expect(ds[3]?.url).toBe('wss://relay.example/derp');
  });

  it('auto adds STUN and direct WireGuard only when a UDP endpoint is advertised; UDP never via proxy', () => {
    const base = { relayUrl: 'https://relay.example:8443', egress: 'auto' as const, proxy: proxied };
    expect(listDestinations(base)).toHaveLength(4);
    const ds = listDestinations({
      ...base,
      udpEndpoint: '[2001:db8::1]:51820',
      derpUrl: 'wss://other:443/derp',
    });
    expect(ds.slice(3).map((d) => [d.purpose, d.host, d.port, d.protocol, d.viaProxy])).toEqual([
      ['relay (DERP)', 'other', 443, 'tcp', true],
      ['STUN', '2001:db8::1', 3478, 'udp', false],
      ['direct WireGuard', '2001:db8::1', 51820, 'udp', false],
    ]);
  });

  it('STUN goes to the advertised stunEndpoint, nowhere when the relay says null, 3478 when it says nothing', () => {
    const base = {
      relayUrl: 'https://relay.example:8443',
      egress: 'auto' as const,
      proxy: none,
      udpEndpoint: 'relay.example:51820',
    };
    const stun = (extra: { stunEndpoint?: string | null; stunServers?: string[] }) =>
      listDestinations({ ...base, ...extra })
        .filter((d) => d.purpose === 'STUN')
        .map((d) => `${d.host}:${d.port}`);
    expect(stun({ stunEndpoint: 'stun.example:13478' })).toEqual(['stun.example:13478']);
    expect(stun({ stunEndpoint: null })).toEqual([]);
    expect(stun({})).toEqual(['relay.example:3478']);
    // An unreadable endpoint is left out rather than guessed.
    expect(stun({ stunEndpoint: 'nonsense' })).toEqual([]);
    // And every --stun-server, after the relay's.
    expect(
      stun({ stunEndpoint: null, stunServers: ['stun.example.net:3478', '[2001:db8::5]:19302'] }),
    ).toEqual(['stun.example.net:3478', '2001:db8::5:19302']);
  });

  it('IPv6 relay hosts are listed without brackets', () => {
    const ds = listDestinations({ relayUrl: 'https://[::1]:8443', egress: '443-only', proxy: none });
    expect(ds.every((d) => d.host === '::1' && d.port === 8443 && !d.viaProxy)).toBe(true);
  });

  it('derpUrlFor and splitEndpoint', () => {
    expect(derpUrlFor('https://relay.example:8443/base/')).toBe('wss://relay.example:8443/base/derp');
    expect(splitEndpoint('relay:51820')).toEqual({ host: 'relay', port: 51820 });
    expect(splitEndpoint('[::1]:1')).toEqual({ host: '::1', port: 1 });
    expect(splitEndpoint('relay:0')).toBeUndefined();
    expect(splitEndpoint('relay')).toBeUndefined();
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const r = splitEndpoint(s);
        if (r) expect(r.port >= 1 && r.port <= 65_535).toBe(true);
      }),
    );
  });
});

describe('STUN check (real UDP socket on loopback)', () => {
  async function responder(answer: boolean): Promise<{ port: number; close: () => void }> {
    const s = createSocket('udp4');
    s.on('message', (msg, rinfo) => {
      if (!answer || msg.length < 20) return;
      const res = Buffer.alloc(20);
      res.writeUInt16BE(0x0101, 0);
      msg.copy(res, 4, 4, 20); // magic cookie and transaction id
      s.send(res, rinfo.port, rinfo.address);
    });
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
    return { port: (s.address() as AddressInfo).port, close: () => s.close() };
  }
  const stun = (port: number): Destination => ({
    host: '127.0.0.1',
    port,
    protocol: 'udp',
    purpose: 'STUN',
    viaProxy: false,
  });

  it('ok when a Binding success with our transaction id comes back', async () => {
    const r = await responder(true);
    try {
      const c = await checkDestination(stun(r.port), {
        trust: { kind: 'system' },
        proxy: none,
        stunTimeoutMs: 2000,
      });
      expect(c).toEqual({ check: 'ok' });
    } finally {
      r.close();
    }
  });

  it('failed with the reason when nothing answers', async () => {
    const r = await responder(false);
    try {
      const c = await checkDestination(stun(r.port), {
        trust: { kind: 'system' },
        proxy: none,
        stunTimeoutMs: 400,
      });
      expect(c).toEqual({
        check: 'failed',
        reason: `Cannot use 127.0.0.1:${r.port} (udp) for STUN: no STUN answer came within 400 ms (UDP to it is blocked, or nothing answers there).`,
      });
    } finally {
      r.close();
    }
  });

  it('direct WireGuard is not probed', async () => {
    const d: Destination = { ...stun(1), purpose: 'direct WireGuard' };
    expect(await checkDestination(d, { trust: { kind: 'system' }, proxy: none })).toBeUndefined();
  });
});
