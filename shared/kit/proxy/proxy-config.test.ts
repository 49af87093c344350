import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { parseProxyUrl, proxyFor, redactUrl, resolveProxySettings, targetOf } from './proxy-config.js';

const relay = targetOf('https://relay.example:8443');
const plain = targetOf('http://relay.example');

describe('resolveProxySettings precedence', () => {
  it('flag > environment > values, per setting', () => {
    const values = { httpsProxy: 'http://values:1', httpProxy: 'http://values:2', noProxy: 'v.test' };
    const env = { HTTPS_PROXY: 'http://env:3128' };
    const a = resolveProxySettings({ flag: 'http://flag:8080', env, values });
    expect(a.https?.url.host).toBe('flag:8080');
    expect(a.https?.source).toBe('flag');
    expect(a.http?.source).toBe('flag');
    const b = resolveProxySettings({ env, values });
    expect(b.https?.url.host).toBe('env:3128');
    expect(b.https?.source).toBe('environment');
    expect(b.http?.url.host).toBe('values:2');
    expect(b.noProxy.matches('x.v.test', 1)).toBe(true);
    expect(b.noProxySource).toBe('values');
    const c = resolveProxySettings({ env: {}, values: {} });
    expect(c.https).toBeNull();
    expect(proxyFor(c, relay)).toBeNull();
  });

  it('lowercase wins over uppercase when both are set; empty counts as unset', () => {
    const s = resolveProxySettings({
      env: {
        https_proxy: 'http://lower:1',
        HTTPS_PROXY: 'http://upper:2',
        http_proxy: '',
        HTTP_PROXY: 'http://up:3',
      },
    });
    expect(s.https?.url.host).toBe('lower:1');
    expect(s.http?.url.host).toBe('up:3');
    const n = resolveProxySettings({
      env: { no_proxy: 'a.test', NO_PROXY: 'b.test', HTTPS_PROXY: 'http://p:1' },
    });
    expect(n.noProxy.matches('a.test', 443)).toBe(true);
    expect(n.noProxy.matches('b.test', 443)).toBe(false);
  });

  it('https destinations use the https proxy, http ones the http proxy, NO_PROXY exempts', () => {
    const s = resolveProxySettings({
      env: { HTTPS_PROXY: 'http://sp:1', HTTP_PROXY: 'http://hp:2', NO_PROXY: 'relay.example:8443' },
    });
    expect(proxyFor(s, relay)).toBeNull();
    expect(proxyFor(s, targetOf('wss://relay.example/derp'))?.url.host).toBe('sp:1');
    expect(proxyFor(s, plain)?.url.host).toBe('hp:2');
    const onlyHttp = resolveProxySettings({ env: { HTTP_PROXY: 'http://hp:2' } });
    expect(proxyFor(onlyHttp, relay)).toBeNull();
  });

  it('the CA for an https proxy comes from the flag, else the values caBundle', () => {
    expect(resolveProxySettings({ env: {}, flagCa: 'FLAGPEM', values: { caBundle: 'VPEM' } }).proxyCa).toBe(
      'FLAGPEM',
    );
    expect(resolveProxySettings({ env: {}, values: { caBundle: 'VPEM' } }).proxyCa).toBe('VPEM');
  });
});

describe('proxy URLs', () => {
  it('reads host:port without a scheme as http', () => {
    expect(parseProxyUrl('proxy.corp:3128', '--proxy').href).toBe('http://proxy.corp:3128/');
  });

  it('refuses other schemes and paths without showing the password', () => {
    for (const bad of ['socks5://u:s3cret@p:1080', 'http://u:s3cret@p:3128/path', 'http://u:s3cret@:1']) {
      try {
        parseProxyUrl(bad, '--proxy');
        expect.unreachable(bad);
      } catch (err) {
        expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        expect(String((err as Error).message)).not.toContain('s3cret');
      }
    }
  });

  it('redactUrl hides the password and keeps the user', () => {
    expect(redactUrl('http://alice:s%40cret@proxy:3128')).toBe('http://alice:***@proxy:3128');
    expect(redactUrl('http://proxy:3128')).toBe('http://proxy:3128');
    expect(redactUrl('not a url //bob:pw@x')).not.toContain('pw');
  });
});

describe('Proxy-Authorization', () => {
  it('is basic auth of the percent-decoded user and password, absent without credentials', async () => {
    const { proxyAuthorization, authority } = await import('./connect-via.js');
    const u = parseProxyUrl('http://al%20ice:p%40ss%3Aw0rd@proxy:3128', '--proxy');
    expect(proxyAuthorization(u)).toBe(`Basic ${Buffer.from('al ice:p@ss:w0rd').toString('base64')}`);
    expect(proxyAuthorization(parseProxyUrl('http://proxy:3128', '--proxy'))).toBeUndefined();
    expect(authority('::1', 443)).toBe('[::1]:443');
    expect(authority('relay.example', 8443)).toBe('relay.example:8443');
  });
});

describe('proxy URL properties', () => {
  const secret = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((s) => `S3cr${s}`);
  it('parseProxyUrl either returns an http(s) URL or throws BAD_INPUT, never showing the password', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), secret, fc.string({ maxLength: 30 }), (head, pw, tail) => {
        const text = `${head}u:${pw}@${tail}`;
        try {
          const u = parseProxyUrl(text, '--proxy');
          expect(['http:', 'https:']).toContain(u.protocol);
          expect(redactUrl(u)).not.toContain(pw);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
          expect((err as Error).message).not.toContain(pw);
        }
      }),
    );
  });

  it('redactUrl never shows the password of an http URL', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: false }), secret, (url, pw) => {
        const u = new URL(url);
        u.username = 'user';
        u.password = pw;
        expect(redactUrl(u)).not.toContain(pw);
        expect(redactUrl(u.href)).not.toContain(pw);
      }),
    );
  });
});
