import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_NO_PROXY_ENTRIES, normalizeHost, parseNoProxy, parseNoProxyEntry } from './no-proxy.js';

describe('NO_PROXY table', () => {
  // [NO_PROXY, host, port, bypass?]
  const table: Array<[string, string, number, boolean]> = [
    ['*', 'anything.example', 443, true],
    ['', 'relay.example', 443, false],
    ['example.com', 'example.com', 443, true],
    ['example.com', 'api.example.com', 443, true],
    ['example.com', 'a.b.example.com', 8443, true],
    ['example.com', 'badexample.com', 443, false],
    ['example.com', 'example.com.evil', 443, false],
    ['.example.com', 'api.example.com', 443, true],
    ['.example.com', 'example.com', 443, true],
    ['*.example.com', 'x.example.com', 443, true],
    ['EXAMPLE.com', 'Api.Example.COM', 443, true],
    ['example.com.', 'api.example.com', 443, true],
    ['example.com', 'api.example.com.', 443, true],
    ['example.com:8443', 'example.com', 8443, true],
    ['example.com:8443', 'example.com', 443, false],
    ['a.test, example.com  b.test', 'example.com', 443, true],
    ['a.test,,b.test', 'c.test', 443, false],
    ['10.1.2.3', '10.1.2.3', 443, true],
    ['10.1.2.3', '10.1.2.4', 443, false],
    ['10.0.0.0/8', '10.200.3.4', 443, true],
    ['10.0.0.0/8', '11.0.0.1', 443, false],
    ['192.168.1.0/24:8443', '192.168.1.7', 8443, true],
    ['192.168.1.0/24:8443', '192.168.1.7', 443, false],
    ['::1', '::1', 443, true],
    ['::1', '[::1]', 443, true],
    ['[::1]:8443', '::1', 8443, true],
    ['[::1]:8443', '::1', 443, false],
    ['fd00::/8', 'fd12:3456::1', 443, true],
    ['fd00::/8', 'fe80::1', 443, false],
    ['FD00::/8', 'FD00:0:0::9', 443, true],
    ['10.0.0.0/8', 'ten.example', 443, false],
    ['127.0.0.1', 'localhost', 443, false],
    ['localhost', 'localhost', 443, true],
    ['example.com:99999', 'example.com', 443, false],
    ['10.0.0.0/33', '10.0.0.1', 443, false],
  ];
  it.each(table)('NO_PROXY=%j host %s port %i -> %s', (list, host, port, want) => {
    expect(parseNoProxy(list).matches(host, port)).toBe(want);
  });

  it('keeps unreadable entries apart', () => {
    const np = parseNoProxy('good.test, bad:port, 1.2.3.4/40, [::1');
    expect(np.rules).toHaveLength(1);
    expect(np.invalid).toEqual(['bad:port', '1.2.3.4/40', '[::1']);
  });

  it('caps the number of entries', () => {
    const list = Array.from({ length: MAX_NO_PROXY_ENTRIES + 5 }, (_, i) => `h${i}.test`).join(',');
    const np = parseNoProxy(list);
    expect(np.rules).toHaveLength(MAX_NO_PROXY_ENTRIES);
    expect(np.invalid).toHaveLength(5);
  });
});

// Labels start with a letter: all-digit names such as 0.0.0.0 are IP literals, not domains.
const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
const domain = fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => l.join('.'));
const port = fc.integer({ min: 1, max: 65_535 });

describe('NO_PROXY properties', () => {
  it('parsing never throws and every part is either a rule or invalid', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const np = parseNoProxy(s);
        const parts = s.split(/[\s,]+/).filter((p) => p !== '');
        expect(np.rules.length + np.invalid.length).toBe(parts.length);
        expect(typeof np.matches('x.test', 443)).toBe('boolean');
      }),
    );
  });

  it('a domain entry matches itself and its subdomains, in any case, at any port', () => {
    fc.assert(
      fc.property(domain, label, port, fc.boolean(), (d, sub, p, dot) => {
        const np = parseNoProxy(dot ? `.${d}` : d);
        expect(np.matches(d, p)).toBe(true);
        expect(np.matches(`${sub}.${d}`.toUpperCase(), p)).toBe(true);
        expect(np.matches(`${sub}.${d}.`, p)).toBe(true);
      }),
    );
  });

  it('a domain entry never matches a name that only ends with the same characters', () => {
    fc.assert(
      fc.property(domain, label, port, (d, prefix, p) => {
        expect(parseNoProxy(d).matches(`${prefix}${d}`, p)).toBe(prefix === '' || prefix.endsWith('.'));
      }),
    );
  });

  it('a host:port entry matches only that port', () => {
    fc.assert(
      fc.property(domain, port, port, (d, p, q) => {
        expect(parseNoProxy(`${d}:${p}`).matches(d, q)).toBe(p === q);
      }),
    );
  });

  it('an IPv4 CIDR matches exactly the addresses sharing its prefix', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), fc.integer({ min: 0, max: 32 }), (net, addr, prefix) => {
        const toInt = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
        const block = 2 ** (32 - prefix);
        const inside = Math.floor(toInt(net) / block) === Math.floor(toInt(addr) / block);
        expect(parseNoProxy(`${net}/${prefix}`).matches(addr, 443)).toBe(inside);
      }),
    );
  });

  it('an IP literal entry matches that literal only', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.ipV6(), (a, b) => {
        const np = parseNoProxy(a);
        expect(np.matches(a, 443)).toBe(true);
        expect(np.matches(`[${a}]`, 443)).toBe(true);
        const same =
          parseNoProxyEntry(a) !== undefined &&
          new URL(`http://[${a}]`).hostname === new URL(`http://[${b}]`).hostname;
        expect(np.matches(b, 443)).toBe(same);
      }),
    );
  });

  it('normalizeHost is idempotent', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        expect(normalizeHost(normalizeHost(s))).toBe(normalizeHost(s));
      }),
    );
  });
});
