import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { DERP_MAX_HANDSHAKES_RANGE, parseListen, resolveRelayConfig } from './config.js';

const dir = mkdtempSync(join(tmpdir(), 'relay-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function badConfig(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
    return (err as Error).message;
  }
  throw new Error('expected BAD_CONFIG');
}

describe('resolveRelayConfig', () => {
  it('has embedded defaults', () => {
    const c = resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } });
    expect(c.listen).toEqual({ host: '127.0.0.1', port: 8443 });
    expect(c.dataDir).toBe(join(dir, 'd'));
    expect(c.store).toEqual({ kind: 'sqlite', path: join(dir, 'd', 'relay.db') });
    expect(c.udpPort).toBe(51820);
    expect(c.stunPort).toBe(3478);
    expect(c.publicUrl).toBeNull();
    expect(c.leaseDurationSeconds).toBe(60);
  });

  it('layers file < env < flags', () => {
    const cfg = file(
      'a.yaml',
      'listen: 0.0.0.0:9000\npublic-url: https://file.example\nudpPort: 5000\nlog-level: debug\n',
    );
    const env = { TUNNEL_RELAY_PUBLIC_URL: 'https://env.example:8443/', TUNNEL_RELAY_UDP_PORT: 'off' };
    const c1 = resolveRelayConfig({ configFile: cfg, cwd: dir });
    expect(c1.listen).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(c1.publicUrl).toBe('https://file.example');
    expect(c1.udpPort).toBe(5000);
    expect(c1.logLevel).toBe('debug');
    const c2 = resolveRelayConfig({ configFile: cfg, env, cwd: dir });
    expect(c2.publicUrl).toBe('https://env.example:8443');
    expect(c2.udpPort).toBeNull();
    const c3 = resolveRelayConfig({
      configFile: cfg,
      env,
      cwd: dir,
      flags: { publicUrl: 'https://flag.example', udpPort: '7' },
    });
    expect(c3.publicUrl).toBe('https://flag.example');
    expect(c3.udpPort).toBe(7);
    expect(c3.listen.port).toBe(9000);
    // --config given as a flag works the same
    expect(resolveRelayConfig({ flags: { config: cfg }, cwd: dir }).listen.port).toBe(9000);
  });

  it('fails fast naming the key, the source and the reason', () => {
    expect(badConfig(() => resolveRelayConfig({ flags: { listen: 'nope' } }))).toMatch(
      /^listen \(--listen\): expected HOST:PORT/,
    );
    expect(badConfig(() => resolveRelayConfig({ env: { TUNNEL_RELAY_STUN_PORT: '70000' } }))).toMatch(
      /^stun-port \(TUNNEL_RELAY_STUN_PORT\)/,
    );
    expect(badConfig(() => resolveRelayConfig({ flags: { publicUrl: 'http://x' } }))).toMatch(
      /public-url.*https/,
    );
    expect(badConfig(() => resolveRelayConfig({ flags: { store: 'mysql://x' } }))).toMatch(/^store/);
    expect(badConfig(() => resolveRelayConfig({ flags: { tlsCert: '/x.pem' } }))).toMatch(/^tls-key/);
    expect(badConfig(() => resolveRelayConfig({ flags: { logLevel: 'loud' } }))).toMatch(/^log-level/);
    expect(badConfig(() => resolveRelayConfig({ flags: { leaseDuration: '5' } }))).toMatch(/^lease-duration/);
    const typo = file('typo.yaml', 'listn: 1.2.3.4:5\n');
    expect(badConfig(() => resolveRelayConfig({ configFile: typo }))).toMatch(/^listn .*unknown key/);
    const notMap = file('list.yaml', '- a\n- b\n');
    expect(badConfig(() => resolveRelayConfig({ configFile: notMap }))).toMatch(/mapping/);
    const broken = file('broken.yaml', 'listen: [\n');
    expect(badConfig(() => resolveRelayConfig({ configFile: broken }))).toMatch(/not valid YAML/);
    expect(badConfig(() => resolveRelayConfig({ configFile: join(dir, 'missing.yaml') }))).toMatch(/ENOENT/);
  });

  it('parses sqlite paths and postgres URLs', () => {
    expect(resolveRelayConfig({ cwd: dir, flags: { store: 'sqlite::memory:' } }).store).toEqual({
      kind: 'sqlite',
      path: ':memory:',
    });
    expect(resolveRelayConfig({ cwd: dir, flags: { store: 'sqlite:x.db' } }).store).toEqual({
      kind: 'sqlite',
      path: join(dir, 'x.db'),
    });
    expect(resolveRelayConfig({ flags: { store: 'postgres://u@h/db' } }).store.kind).toBe('postgres');
  });

  it('property: parseListen round-trips host:port and refuses everything else with BAD_CONFIG', () => {
    const host = fc.oneof(fc.ipV4(), fc.domain(), fc.constant('localhost'));
    fc.assert(
      fc.property(host, fc.integer({ min: 0, max: 65535 }), (h, p) => {
        expect(parseListen(`${h}:${p}`)).toEqual({ host: h, port: p });
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (s) => {
        try {
          const r = parseListen(s);
          expect(s.endsWith(`:${r.port}`)).toBe(true);
          expect(r.port).toBeLessThanOrEqual(65535);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
        }
      }),
    );
    expect(parseListen('[::1]:8443')).toEqual({ host: '::1', port: 8443 });
  });

  it('property: derp-max-handshakes takes whole numbers in its range from any layer, BAD_CONFIG otherwise', () => {
    const { min, max } = DERP_MAX_HANDSHAKES_RANGE;
    expect(resolveRelayConfig().derpMaxHandshakes).toBe(4_096);
    const cfg = file('derp.yaml', 'derp-max-handshakes: 100\n');
    expect(resolveRelayConfig({ configFile: cfg }).derpMaxHandshakes).toBe(100);
    expect(
      resolveRelayConfig({ configFile: cfg, env: { TUNNEL_RELAY_DERP_MAX_HANDSHAKES: '200' } })
        .derpMaxHandshakes,
    ).toBe(200);
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -10, max: 2 * max }), fc.string({ maxLength: 12 })), (v) => {
        const text = String(v);
        const n = Number(text);
        const ok = /^\d+$/.test(text) && n >= min && n <= max;
        if (ok) expect(resolveRelayConfig({ flags: { derpMaxHandshakes: text } }).derpMaxHandshakes).toBe(n);
        else
          expect(badConfig(() => resolveRelayConfig({ flags: { derpMaxHandshakes: text } }))).toBe(
            `derp-max-handshakes (--derp-max-handshakes): expected a whole number ${min}-${max}, got ${JSON.stringify(text)}`,
          );
      }),
    );
  });
});

describe('plain-http (TLS terminated in front)', () => {
  const url = 'https://relay.example.com';

  it('layers like the other keys: file < env < flags, and resolves public-ca-file against cwd', () => {
    const f = file(
      'plain.yaml',
      'plain-http: true\npublic-url: https://from-file.example\npublicCaFile: ca.pem\n',
    );
    const fromFile = resolveRelayConfig({ cwd: dir, configFile: f, flags: { dataDir: 'd' } });
    expect(fromFile.plainHttp).toBe(true);
    expect(fromFile.publicCaFile).toBe(join(dir, 'ca.pem'));
    expect(fromFile.publicUrl).toBe('https://from-file.example');
    // env turns plain-http off over the file; the file's public-ca-file then no longer applies.
    expect(
      badConfig(() =>
        resolveRelayConfig({
          cwd: dir,
          configFile: f,
          env: { TUNNEL_RELAY_PLAIN_HTTP: 'false' },
          flags: { dataDir: 'd' },
        }),
      ),
    ).toMatch(/^public-ca-file \(.*plain\.yaml\): "ca.pem" only applies with plain-http/);
  });

  it('is off by default with no public CA', () => {
    const c = resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } });
    expect(c.plainHttp).toBe(false);
    expect(c.publicCaFile).toBeNull();
  });

  it('accepts --plain-http with an https public URL, from env or flags', () => {
    const viaEnv = resolveRelayConfig({
      cwd: dir,
      env: {
        TUNNEL_RELAY_PLAIN_HTTP: 'true',
        TUNNEL_RELAY_PUBLIC_URL: url,
        TUNNEL_RELAY_PUBLIC_CA_FILE: 'x/ca.pem',
      },
      flags: { dataDir: 'd' },
    });
    expect(viaEnv).toMatchObject({ plainHttp: true, publicUrl: url, publicCaFile: join(dir, 'x/ca.pem') });
    const flagWins = resolveRelayConfig({
      cwd: dir,
      env: { TUNNEL_RELAY_PLAIN_HTTP: 'true', TUNNEL_RELAY_PUBLIC_URL: url },
      flags: { dataDir: 'd', plainHttp: false },
    });
    expect(flagWins.plainHttp).toBe(false);
  });

  it('needs a public URL and refuses http:// ones, naming the value', () => {
    expect(
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', plainHttp: true } })),
    ).toMatch(/^public-url \(--plain-http\): plain-http needs --public-url https:/);
    expect(
      badConfig(() =>
        resolveRelayConfig({
          cwd: dir,
          flags: { dataDir: 'd', plainHttp: true, publicUrl: 'http://relay.example.com:80' },
        }),
      ),
    ).toMatch(
      /^public-url \(--public-url\): must start with https:\/\/, got "http:\/\/relay.example.com:80"/,
    );
  });

  it('refuses --tls-cert / --tls-key with it, naming the value', () => {
    const flags = { dataDir: 'd', plainHttp: true, publicUrl: url };
    expect(
      badConfig(() =>
        resolveRelayConfig({ cwd: dir, flags: { ...flags, tlsCert: 'c.pem', tlsKey: 'k.pem' } }),
      ),
    ).toMatch(/^tls-cert \(--tls-cert\): "c.pem" cannot be used with plain-http/);
    expect(
      badConfig(() =>
        resolveRelayConfig({
          cwd: dir,
          env: { TUNNEL_RELAY_TLS_CERT: 'c.pem', TUNNEL_RELAY_TLS_KEY: 'k.pem' },
          flags,
        }),
      ),
    ).toMatch(/^tls-cert \(TUNNEL_RELAY_TLS_CERT\): "c.pem"/);
  });

  it('refuses public-ca-file without plain-http and non-boolean plain-http values', () => {
    expect(
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', publicCaFile: 'ca.pem' } })),
    ).toMatch(/^public-ca-file \(--public-ca-file\): "ca.pem" only applies with plain-http/);
    expect(
      badConfig(() =>
        resolveRelayConfig({ cwd: dir, env: { TUNNEL_RELAY_PLAIN_HTTP: 'maybe' }, flags: { dataDir: 'd' } }),
      ),
    ).toMatch(/^plain-http \(TUNNEL_RELAY_PLAIN_HTTP\): expected true or false, got "maybe"/);
  });
});

describe('HTTP limits', () => {
  it('defaults: 15 s head, 30 s body, 90 s idle, 256 pending per source, total from the open-file limit', () => {
    const c = resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } });
    expect(c.http).toEqual({
      headerTimeoutMs: 15_000,
      bodyTimeoutMs: 30_000,
      idleTimeoutMs: 90_000,
      maxConnections: null,
      maxPendingPerSource: 256,
    });
    const plain = resolveRelayConfig({
      cwd: dir,
      flags: { dataDir: 'd', plainHttp: true, publicUrl: 'https://relay.example' },
    });
    expect(plain.http.maxPendingPerSource).toBeNull();
  });

  it('takes seconds and counts from flags, env and file; off turns the per-source cap off', () => {
    const cfg = file('http.yaml', 'header-timeout: 5\nmaxConnections: 500\n');
    const c = resolveRelayConfig({
      cwd: dir,
      configFile: cfg,
      env: { TUNNEL_RELAY_BODY_TIMEOUT: '7', TUNNEL_RELAY_MAX_CONNECTIONS_PER_SOURCE: 'off' },
      flags: { dataDir: 'd', idleTimeout: '120' },
    });
    expect(c.http).toEqual({
      headerTimeoutMs: 5_000,
      bodyTimeoutMs: 7_000,
      idleTimeoutMs: 120_000,
      maxConnections: 500,
      maxPendingPerSource: null,
    });
    const per = resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', maxConnectionsPerSource: '3' } });
    expect(per.http.maxPendingPerSource).toBe(3);
  });

  it('refuses bad values with BAD_CONFIG naming the flag', () => {
    const bad = (flags: Record<string, unknown>) =>
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', ...flags } }));
    expect(bad({ headerTimeout: '0' })).toBe(
      'header-timeout (--header-timeout): expected whole seconds 1-3600, got "0"',
    );
    expect(bad({ bodyTimeout: '1.5' })).toMatch(
      /^body-timeout \(--body-timeout\): expected whole seconds 1-3600/,
    );
    expect(bad({ idleTimeout: '3601' })).toMatch(/^idle-timeout \(--idle-timeout\)/);
    expect(bad({ maxConnections: '15' })).toBe(
      'max-connections (--max-connections): expected a connection count 16-1000000, got "15"',
    );
    expect(bad({ maxConnectionsPerSource: 'none' })).toMatch(
      /^max-connections-per-source \(--max-connections-per-source\): expected a connection count 1-1000000 or 'off', got "none"/,
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const ok = /^\d{1,9}$/.test(text) && Number(text) >= 1 && Number(text) <= 3600;
        if (ok)
          expect(
            resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', headerTimeout: text } }).http
              .headerTimeoutMs,
          ).toBe(Number(text) * 1000);
        else expect(bad({ headerTimeout: text })).toMatch(/^header-timeout/);
      }),
    );
  });
});

describe('drain grace', () => {
  it('is 10 s by default and takes whole seconds from flags, env and file', () => {
    expect(resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } }).drainGraceMs).toBe(10_000);
    expect(resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', drainGrace: '25' } }).drainGraceMs).toBe(
      25_000,
    );
    const env = { TUNNEL_RELAY_DRAIN_GRACE: '3' };
    expect(resolveRelayConfig({ cwd: dir, env, flags: { dataDir: 'd' } }).drainGraceMs).toBe(3_000);
    const cfg = file('drain.yaml', 'drain-grace: 45\n');
    expect(resolveRelayConfig({ cwd: dir, configFile: cfg, flags: { dataDir: 'd' } }).drainGraceMs).toBe(
      45_000,
    );
  });

  it('refuses anything but whole seconds 1-3600 with BAD_CONFIG naming the flag', () => {
    const bad = (flags: Record<string, unknown>) =>
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', ...flags } }));
    expect(bad({ drainGrace: '0' })).toBe(
      'drain-grace (--drain-grace): expected whole seconds 1-3600, got "0"',
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const ok = /^\d{1,9}$/.test(text) && Number(text) >= 1 && Number(text) <= 3600;
        if (ok)
          expect(
            resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', drainGrace: text } }).drainGraceMs,
          ).toBe(Number(text) * 1000);
        else
          expect(bad({ drainGrace: text })).toMatch(/^drain-grace \(--drain-grace\): expected whole seconds/);
      }),
    );
  });
});

describe('control-plane caps', () => {
  const resolve = (o: {
    flags?: Record<string, unknown>;
    env?: Record<string, string>;
    configFile?: string;
  }) => resolveRelayConfig({ cwd: dir, ...o, flags: { dataDir: 'd', ...o.flags } }).controlLimits;

  it('has defaults and takes every key from flags, env and file', () => {
    expect(resolve({})).toEqual({
      maxPendingRegistrations: 1_000,
      maxPendingPerKey: 250,
      writeBudgetPerMinute: 240,
      auditMaxRows: 100_000,
      auditRetentionMs: 30 * 86_400_000,
    });
    const flags = {
      maxPendingRegistrations: '50',
      maxPendingPerKey: '5',
      writeBudget: '60',
      auditMaxRows: '2000',
      auditRetention: '90d',
    };
    expect(resolve({ flags })).toEqual({
      maxPendingRegistrations: 50,
      maxPendingPerKey: 5,
      writeBudgetPerMinute: 60,
      auditMaxRows: 2_000,
      auditRetentionMs: 90 * 86_400_000,
    });
    const env = { TUNNEL_RELAY_WRITE_BUDGET: '7', TUNNEL_RELAY_AUDIT_RETENTION: '12h' };
    expect(resolve({ env })).toMatchObject({ writeBudgetPerMinute: 7, auditRetentionMs: 12 * 3_600_000 });
    const cfg = file('caps.yaml', 'max-pending-per-key: 9\naudit-max-rows: 5000\n');
    expect(resolve({ configFile: cfg })).toMatchObject({ maxPendingPerKey: 9, auditMaxRows: 5_000 });
  });

  it('refuses values out of range with BAD_CONFIG naming the flag', () => {
    const bad = (flags: Record<string, unknown>) => badConfig(() => resolve({ flags }));
    expect(bad({ maxPendingPerKey: '0' })).toBe(
      'max-pending-per-key (--max-pending-per-key): expected a whole number 1-100000, got "0"',
    );
    expect(bad({ maxPendingRegistrations: '100001' })).toMatch(/^max-pending-registrations \(--max-/);
    expect(bad({ writeBudget: 'lots' })).toMatch(/^write-budget \(--write-budget\): expected a whole number/);
    expect(bad({ auditMaxRows: '999' })).toMatch(/^audit-max-rows \(--audit-max-rows\): expected .* 1000-/);
    for (const retention of ['30m', '367d', 'forever', ''])
      expect(bad({ auditRetention: retention })).toMatch(/^audit-retention \(--audit-retention\): expected/);
  });
});

describe('--mode', () => {
  const meshKey = () => {
    const p = join(dir, 'mesh.key');
    writeFileSync(p, `${'k'.repeat(48)}\n`, { mode: 0o600 });
    return p;
  };
  const relay = (extra: Record<string, unknown> = {}) => ({
    cwd: dir,
    flags: { mode: 'relay', store: 'postgres://u@h/db', meshKeyFile: meshKey(), ...extra },
  });

  it('is hub by default; relay mode defaults the UDP port off and keeps STUN', () => {
    expect(resolveRelayConfig({ cwd: dir }).mode).toBe('hub');
    expect(resolveRelayConfig({ cwd: dir, flags: { mode: 'all' } }).mode).toBe('hub');
    expect(resolveRelayConfig({ cwd: dir, flags: { mode: 'hub' } }).mode).toBe('hub');
    const c = resolveRelayConfig(relay());
    expect(c.mode).toBe('relay');
    expect(c.udpPort).toBeNull();
    expect(c.stunPort).toBe(3478);
    expect(c.hubKeyFile).toBeNull();
    expect(resolveRelayConfig(relay({ udpPort: 'off' })).udpPort).toBeNull();
  });

  it('refuses what would give a relay-mode replica a hub key or a WireGuard port, naming the flag', () => {
    expect(badConfig(() => resolveRelayConfig({ cwd: dir, flags: { mode: 'edge' } }))).toMatch(
      /^mode \(--mode\): expected all \(or hub\) or relay, got "edge"/,
    );
    expect(badConfig(() => resolveRelayConfig(relay({ hubKeyFile: 'hub.key' })))).toMatch(
      /^hub-key-file \(--hub-key-file\): a relay-mode replica holds no hub key/,
    );
    expect(badConfig(() => resolveRelayConfig(relay({ udpPort: '51820' })))).toMatch(
      /^udp-port \(--udp-port\): "51820": --mode relay has no WireGuard UDP port/,
    );
    expect(badConfig(() => resolveRelayConfig(relay({ derpMaxHandshakes: '100' })))).toMatch(
      /^derp-max-handshakes \(--derp-max-handshakes\)/,
    );
    expect(
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { mode: 'relay', meshKeyFile: meshKey() } })),
    ).toMatch(/^store \(--mode\): --mode relay needs the fleet's postgres:\/\/ --store/);
    expect(
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { mode: 'relay', store: 'postgres://u@h/db' } })),
    ).toMatch(/^mesh-key-file \(--mode\)/);
    expect(
      badConfig(() =>
        resolveRelayConfig({
          cwd: dir,
          env: { TUNNEL_RELAY_MODE: 'relay', TUNNEL_RELAY_HUB_KEY_FILE: 'h' },
          flags: relay().flags,
        }),
      ),
    ).toMatch(/^hub-key-file \(TUNNEL_RELAY_HUB_KEY_FILE\)/);
  });
});

describe('--proxy-protocol', () => {
  it('is off by default and takes CIDRs and bare addresses from flags, env and file', () => {
    expect(resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } }).proxyProtocol).toEqual([]);
    expect(
      resolveRelayConfig({
        cwd: dir,
        flags: { dataDir: 'd', proxyProtocol: '10.0.0.0/8, 192.0.2.7,2001:db8::/32' },
      }).proxyProtocol,
    ).toEqual([
      { network: '10.0.0.0', prefix: 8, family: 'ipv4' },
      { network: '192.0.2.7', prefix: 32, family: 'ipv4' },
      { network: '2001:db8::', prefix: 32, family: 'ipv6' },
    ]);
    const env = { TUNNEL_RELAY_PROXY_PROTOCOL: '127.0.0.5' };
    expect(resolveRelayConfig({ cwd: dir, env, flags: { dataDir: 'd' } }).proxyProtocol).toHaveLength(1);
    const cfg = file('proxy.yaml', 'proxy-protocol: [10.1.0.0/16, "::1"]\n');
    expect(resolveRelayConfig({ cwd: dir, configFile: cfg, flags: { dataDir: 'd' } }).proxyProtocol).toEqual([
      { network: '10.1.0.0', prefix: 16, family: 'ipv4' },
      { network: '::1', prefix: 128, family: 'ipv6' },
    ]);
  });

  it('refuses what is not an address or CIDR with BAD_CONFIG naming the flag and the value', () => {
    const bad = (proxyProtocol: unknown) =>
      badConfig(() => resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd', proxyProtocol } }));
    expect(bad('10.0.0.0/33')).toBe(
      'proxy-protocol (--proxy-protocol): "10.0.0.0/33" is not an address or CIDR (e.g. 10.0.0.0/8, 192.0.2.7, 2001:db8::/32)',
    );
    for (const v of [
      'lb.example',
      '10.0.0.0/8/1',
      '::1/129',
      '10.0.0.0/08',
      'fe80::1%eth0',
      '10.0.0.1,',
      '',
    ]) {
      expect(bad(v)).toMatch(/^proxy-protocol \(--proxy-protocol\): /);
    }
    expect(bad(42)).toMatch(/comma-separated list/);
    fc.assert(
      fc.property(fc.string({ maxLength: 24 }), (text) => {
        try {
          const got = resolveRelayConfig({
            cwd: dir,
            flags: { dataDir: 'd', proxyProtocol: text },
          }).proxyProtocol;
          expect(got.length).toBeGreaterThan(0);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
          expect((err as Error).message).toMatch(/^proxy-protocol \(--proxy-protocol\): /);
        }
      }),
    );
  });
});
