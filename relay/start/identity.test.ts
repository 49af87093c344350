import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../shared/errors.js';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { LogCapture } from '../../test/helpers/test-relay.js';
import { freePort } from '../../test/helpers/tinyproxy.js';
import { SqliteStore } from '../control/store/sqlite.js';
import { resolveRelayConfig } from '../ops/config/config.js';
import { loadHubKey, loadOrCreateHubKey } from '../ops/hub-key.js';
import { caPinOf, createSelfSignedCert } from '../ops/tls/self-signed.js';
import { certAltNames, loadOrCreateTls, loadPublicCa } from './identity.js';
import { certCovers, startRelay } from './server.js';

const dir = mkdtempSync(join(tmpdir(), 'relay-identity-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('start-up failures', () => {
  it('an unusable data dir or store path is BAD_CONFIG naming the key', async () => {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const c1 = resolveRelayConfig({
      flags: { dataDir: join(file, 'sub'), listen: '127.0.0.1:0', stunPort: 'off', udpPort: 'off' },
    });
    await expect(startRelay(c1, { logStream: new LogCapture() })).rejects.toThrow(
      /^data-dir: cannot prepare .*ENOTDIR/,
    );
    const c2 = resolveRelayConfig({
      flags: {
        dataDir: join(dir, 'ok'),
        listen: '127.0.0.1:0',
        stunPort: 'off',
        udpPort: 'off',
        store: `sqlite:${join(dir, 'missing', 'x.db')}`,
      },
    });
    await expect(startRelay(c2, { logStream: new LogCapture() })).rejects.toThrow(
      /^store: cannot open sqlite:/,
    );
    const pgPort = await freePort();
    const c3 = resolveRelayConfig({
      flags: {
        dataDir: join(dir, 'ok2'),
        listen: '127.0.0.1:0',
        store: `postgres://u@127.0.0.1:${pgPort}/db`,
      },
    });
    await expect(startRelay(c3, { logStream: new LogCapture() })).rejects.toThrow(
      new RegExp(`^store: cannot use postgres://u@127\\.0\\.0\\.1:${pgPort}/db \\(ECONNREFUSED`),
    );
  });

  it('a port in use is BAD_CONFIG naming listen, and the store is closed again', async () => {
    const first = await startRelay(
      resolveRelayConfig({
        flags: { dataDir: join(dir, 'p1'), listen: '127.0.0.1:0', stunPort: 'off', udpPort: 'off' },
      }),
      {
        logStream: new LogCapture(),
      },
    );
    try {
      const port = new URL(first.url).port;
      const second = resolveRelayConfig({ flags: { dataDir: join(dir, 'p2'), listen: `127.0.0.1:${port}` } });
      await expect(startRelay(second, { logStream: new LogCapture() })).rejects.toThrow(
        new RegExp(`^listen: cannot bind 127.0.0.1:${port} \\(EADDRINUSE\\)`),
      );
    } finally {
      await first.close();
    }
  });
});

describe('plugin failure', () => {
  it('a plugin that throws fails startRelay and closes the store', async () => {
    const store = new SqliteStore(':memory:');
    const config = resolveRelayConfig({
      flags: { dataDir: join(dir, 'plug'), listen: '127.0.0.1:0', stunPort: 'off', udpPort: 'off' },
    });
    await expect(
      startRelay(config, {
        logStream: new LogCapture(),
        store,
        plugins: [
          async () => {
            throw new Error('data plane broke');
          },
        ],
      }),
    ).rejects.toThrow('data plane broke');
    await expect(store.ping()).rejects.toThrow(/closed/);
  });
});

describe('certificate coverage', () => {
  it('warns at start when the public URL host is not in the existing certificate', async () => {
    const dataDir = join(dir, 'cov');
    const a = await startRelay(
      resolveRelayConfig({ flags: { dataDir, listen: '127.0.0.1:0', stunPort: 'off', udpPort: 'off' } }),
      {
        logStream: new LogCapture(),
      },
    );
    expect(certCovers(Buffer.from(new X509Certificate(a.caPem).raw), 'https://localhost:1')).toBe(true);
    await a.close();
    const logs = new LogCapture();
    const b = await startRelay(
      resolveRelayConfig({
        flags: {
          dataDir,
          listen: '127.0.0.1:0',
          stunPort: 'off',
          udpPort: 'off',
          publicUrl: 'https://moved.example.com',
        },
      }),
      { logStream: logs },
    );
    await b.close();
    expect(logs.text).toContain('does not name the public URL host');
    expect(certCovers(Buffer.from(new X509Certificate(b.caPem).raw), 'https://moved.example.com')).toBe(
      false,
    );
  });
});

describe('relay identity', () => {
  it('covers the public URL host and is stable across loads', () => {
    const config = resolveRelayConfig({
      flags: {
        dataDir: join(dir, 'a'),
        publicUrl: 'https://relay.example.com:8443',
        listen: '10.1.2.3:8443',
      },
    });
    expect(certAltNames(config)).toEqual(['localhost', '127.0.0.1', '::1', 'relay.example.com', '10.1.2.3']);
    const first = loadOrCreateTls(config, Date.now());
    const x = new X509Certificate(first.certDer);
    expect(x.checkHost('relay.example.com')).toBe('relay.example.com');
    expect(x.checkIP('10.1.2.3')).toBe('10.1.2.3');
    expect(first.caPin).toBe(caPinOf(first.certDer));
    expect(loadOrCreateTls(config, Date.now()).caPin).toBe(first.caPin);
    const hub = loadOrCreateHubKey(config.dataDir);
    expect(loadOrCreateHubKey(config.dataDir).publicKey.equals(hub.publicKey)).toBe(true);
  });

  it('--hub-key-file: read (never created, mode narrowed to 0600), BAD_CONFIG naming the flag when unusable', () => {
    const keyFile = join(dir, 'fleet-hub.key');
    const pair = generateKeyPair();
    writeFileSync(keyFile, `${keyToBase64(pair.privateKey)}\n`, { mode: 0o644 });
    chmodSync(keyFile, 0o644);
    const fixed: string[] = [];
    const config = resolveRelayConfig({ flags: { dataDir: join(dir, 'h'), hubKeyFile: keyFile } });
    expect(loadHubKey(config, (f) => fixed.push(f.file)).publicKey.equals(pair.publicKey)).toBe(true);
    expect(fixed).toEqual([keyFile]);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(existsSync(join(dir, 'h', 'hub.key'))).toBe(false);
    for (const [content, reason] of [
      [null, 'cannot read'],
      ['not a key', 'does not hold a WireGuard private key'],
    ] as const) {
      const path = join(dir, `bad-hub-${reason.length}.key`);
      if (content !== null) writeFileSync(path, content, { mode: 0o600 });
      const bad = resolveRelayConfig({ flags: { dataDir: join(dir, 'h'), hubKeyFile: path } });
      expect(() => loadHubKey(bad)).toThrow(
        expect.objectContaining({
          code: 'BAD_CONFIG',
          message: expect.stringMatching(new RegExp(`^hub-key-file: .*${reason}`)),
        }),
      );
    }
  });

  it('uses given cert/key files and refuses a key that does not match', () => {
    const a = createSelfSignedCert({ commonName: 'a', altNames: ['a.example'], now: Date.now() });
    const b = createSelfSignedCert({ commonName: 'b', altNames: ['b.example'], now: Date.now() });
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    const wrongKey = join(dir, 'wrong.pem');
    writeFileSync(cert, a.certPem);
    writeFileSync(key, a.keyPem, { mode: 0o644 });
    chmodSync(key, 0o644);
    writeFileSync(wrongKey, b.keyPem);
    const fixed: string[] = [];
    const ok = loadOrCreateTls(
      resolveRelayConfig({ flags: { dataDir: join(dir, 'b'), tlsCert: cert, tlsKey: key } }),
      0,
      (f) => fixed.push(`${f.file} ${f.oldMode}`),
    );
    expect(ok.caPin).toBe(caPinOf(a.certDer));
    // A --tls-key of ours readable by others is set to 0600, with a report.
    expect(fixed).toEqual([`${key} 644`]);
    expect(statSync(key).mode & 0o777).toBe(0o600);
    const bad = resolveRelayConfig({ flags: { dataDir: join(dir, 'c'), tlsCert: cert, tlsKey: wrongKey } });
    expect(() => loadOrCreateTls(bad, 0)).toThrow(/tls-key: the private key does not belong to tls-cert/);
    const missing = resolveRelayConfig({
      flags: { dataDir: join(dir, 'd'), tlsCert: join(dir, 'nope.pem'), tlsKey: key },
    });
    try {
      loadOrCreateTls(missing, 0);
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
      expect((err as Error).message).toMatch(/^tls-cert: cannot read .*ENOENT/);
    }
  });
});

describe('plain-http: the public CA', () => {
  it('loadPublicCa pins the first certificate and keeps every certificate of the file', () => {
    const a = createSelfSignedCert({ commonName: 'ca-a', altNames: ['a.example'], now: Date.now() });
    const b = createSelfSignedCert({ commonName: 'ca-b', altNames: ['b.example'], now: Date.now() });
    const f = join(dir, 'public-ca.pem');
    writeFileSync(f, `# bundle\n${a.certPem}\n${b.certPem}`);
    const ca = loadPublicCa(f);
    expect(ca.pin).toBe(caPinOf(a.certDer));
    expect(ca.pem).toBe(`${a.certPem.trimEnd()}\n${b.certPem.trimEnd()}\n`);
  });

  it('refuses a missing file, one without certificates and one whose certificate does not parse', () => {
    const cases: Array<[string, string | null, RegExp]> = [
      [join(dir, 'absent.pem'), null, /^public-ca-file: cannot read .*ENOENT/],
      [
        join(dir, 'key-only.pem'),
        createSelfSignedCert({ commonName: 'k', altNames: [], now: 0 }).keyPem,
        /holds no PEM CERTIFICATE block/,
      ],
      [
        join(dir, 'garbage.pem'),
        '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
        /holds a certificate that does not parse/,
      ],
    ];
    for (const [path, text, re] of cases) {
      if (text !== null) writeFileSync(path, text);
      try {
        loadPublicCa(path);
        expect.unreachable();
      } catch (err) {
        expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
        expect((err as Error).message).toMatch(re);
      }
    }
  });

  it('startRelay with plain-http serves HTTP, creates no TLS files and advertises the public CA or none', async () => {
    const a = createSelfSignedCert({ commonName: 'ca-a', altNames: ['relay.example.com'], now: Date.now() });
    const f = join(dir, 'plain-ca.pem');
    writeFileSync(f, a.certPem);
    const quiet = new LogCapture();
    const withCa = await startRelay(
      resolveRelayConfig({
        flags: {
          dataDir: join(dir, 'plain-1'),
          listen: '127.0.0.1:0',
          stunPort: 'off',
          udpPort: 'off',
          plainHttp: true,
          publicUrl: 'https://relay.example.com',
          publicCaFile: f,
        },
      }),
      { logStream: quiet },
    );
    try {
      expect(withCa.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(withCa.publicUrl).toBe('https://relay.example.com');
      expect(withCa.plainHttp).toBe(true);
      expect(withCa.caPin).toBe(caPinOf(a.certDer));
      expect(withCa.context.caPem).toBe(`${a.certPem.trimEnd()}\n`);
      expect(existsSync(join(dir, 'plain-1', 'tls'))).toBe(false);
      const res = await fetch(`${withCa.url}/healthz`);
      expect(res.status).toBe(200);
    } finally {
      await withCa.close();
    }
    const logs = new LogCapture();
    const elsewhere = await startRelay(
      resolveRelayConfig({
        flags: {
          dataDir: join(dir, 'plain-3'),
          listen: '127.0.0.1:0',
          stunPort: 'off',
          udpPort: 'off',
          plainHttp: true,
          publicUrl: 'https://other.example.com',
          publicCaFile: f,
        },
      }),
      { logStream: logs },
    );
    // Not the served certificate: no pin in join commands (it could not match), the CA still in kubeconfigs.
    expect(elsewhere.context.caPin).toBeNull();
    expect(elsewhere.context.caPem).toBe(`${a.certPem.trimEnd()}\n`);
    await elsewhere.close();
    expect(logs.text).toContain(
      'does not name the public URL host, so it is not the one the terminator serves',
    );
    expect(quiet.text).not.toContain('--public-ca-file');
    const none = await startRelay(
      resolveRelayConfig({
        flags: {
          dataDir: join(dir, 'plain-2'),
          listen: '127.0.0.1:0',
          stunPort: 'off',
          udpPort: 'off',
          plainHttp: true,
          publicUrl: 'https://r.example',
        },
      }),
      { logStream: new LogCapture() },
    );
    try {
      expect(none.caPin).toBe('');
      expect(none.context.caPin).toBeNull();
      expect(none.context.caPem).toBeNull();
    } finally {
      await none.close();
    }
  });
});
