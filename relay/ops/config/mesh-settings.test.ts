import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { MESH_KEY_HEADER, meshHeaderValue, meshOrigin } from '../../fleet/mesh/mesh-auth.js';
import { resolveRelayConfig } from './config.js';
import {
  MAX_MESH_URL_LENGTH,
  MeshKey,
  MIN_MESH_KEY_BYTES,
  parseMeshUrl,
  readMeshKey,
} from './mesh-settings.js';

const dir = mkdtempSync(join(tmpdir(), 'mesh-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
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

const PG = 'postgres://relay@127.0.0.1:5432/relay';
const KEY = 'k'.repeat(MIN_MESH_KEY_BYTES);

describe('parseMeshUrl', () => {
  it('keeps https://HOST:PORT and refuses anything else with BAD_CONFIG naming mesh-url', () => {
    expect(parseMeshUrl('https://10.0.0.7:8443', '--mesh-url')).toBe('https://10.0.0.7:8443');
    expect(parseMeshUrl('https://[fd00::7]:8443/', '--mesh-url')).toBe('https://[fd00::7]:8443');
    for (const bad of [
      'http://10.0.0.7:8443',
      'https://u:p@h:1',
      'https://h:1/x',
      'https://h?q',
      'nope',
      42,
    ]) {
      expect(badConfig(() => parseMeshUrl(bad, '--mesh-url'))).toMatch(/^mesh-url \(--mesh-url\): /);
    }
    expect(badConfig(() => parseMeshUrl(`https://${'a'.repeat(MAX_MESH_URL_LENGTH)}:1`, 'f'))).toContain(
      'at most',
    );
  });

  it('any string: a canonical https origin or BAD_CONFIG, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.webUrl(),
          fc.webUrl().map((u) => u.replace(/^http:/, 'https:')),
        ),
        (s) => {
          try {
            const out = parseMeshUrl(s, 'flag');
            expect(out).toBe(new URL(out).origin);
            expect(out.startsWith('https://')).toBe(true);
            expect(parseMeshUrl(out, 'flag')).toBe(out);
          } catch (err) {
            expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('readMeshKey', () => {
  it('takes at least 32 bytes (trailing white space removed); refuses shorter naming the count, never the key', () => {
    expect(
      readMeshKey(file('ok', `${KEY}\n`), 'f')
        .reveal()
        .toString(),
    ).toBe(KEY);
    const short = 'secret-but-too-short';
    const message = badConfig(() => readMeshKey(file('short', `${short}\n`), '--mesh-key-file'));
    expect(message).toContain(`holds ${short.length} bytes`);
    expect(message).not.toContain(short);
    expect(badConfig(() => readMeshKey(join(dir, 'missing'), '--mesh-key-file'))).toContain('ENOENT');
  });

  it('any file content: a key of >= 32 bytes or BAD_CONFIG', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        const p = file('prop', '');
        writeFileSync(p, bytes);
        try {
          expect(readMeshKey(p, 'f').reveal().length).toBeGreaterThanOrEqual(MIN_MESH_KEY_BYTES);
        } catch (err) {
          expect(isTunnelError(err, 'BAD_CONFIG')).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a MeshKey prints and serializes as nothing', () => {
    const k = new MeshKey(Buffer.from(KEY));
    expect(JSON.stringify({ k })).not.toContain(KEY);
    expect(inspect(k)).not.toContain(KEY);
  });
});

describe('mesh flags in resolveRelayConfig', () => {
  const keyFile = file('mesh.key', `${KEY}\n`);

  it('are off by default and need a postgres store, the relay TLS and a key with --mesh-url', () => {
    expect(resolveRelayConfig({ cwd: dir, flags: { dataDir: 'd' } }).mesh).toEqual({
      url: null,
      key: null,
      deadAfterMs: 5_000,
    });
    expect(badConfig(() => resolveRelayConfig({ cwd: dir, flags: { meshKeyFile: keyFile } }))).toMatch(
      /^mesh-key-file \(--mesh-key-file\): .*postgres/,
    );
    expect(
      badConfig(() =>
        resolveRelayConfig({ cwd: dir, flags: { store: PG, meshUrl: 'https://10.0.0.1:8443' } }),
      ),
    ).toMatch(/^mesh-key-file .*required with --mesh-url/);
    expect(
      badConfig(() =>
        resolveRelayConfig({
          cwd: dir,
          flags: { store: PG, meshKeyFile: keyFile, plainHttp: true, publicUrl: 'https://r.example' },
        }),
      ),
    ).toContain('plain-http');
    expect(
      badConfig(() =>
        resolveRelayConfig({ cwd: dir, flags: { store: PG, meshKeyFile: keyFile, listen: '0.0.0.0:8443' } }),
      ),
    ).toMatch(/^mesh-url .*0\.0\.0\.0:8443.*POD_IP/);
    expect(badConfig(() => resolveRelayConfig({ cwd: dir, flags: { meshDeadAfter: '1' } }))).toMatch(
      /^mesh-dead-after \(--mesh-dead-after\): expected whole seconds 2-300/,
    );
  });

  it('resolve from flags, env and the config file; the mesh URL defaults to a specific --listen address', () => {
    const c = resolveRelayConfig({
      cwd: dir,
      flags: { store: PG, meshKeyFile: 'mesh.key', meshDeadAfter: '9', hubKeyFile: 'hub.key' },
    });
    expect(c.mesh.url).toBeNull();
    expect(c.mesh.deadAfterMs).toBe(9_000);
    expect(c.mesh.key?.reveal().toString()).toBe(KEY);
    expect(c.hubKeyFile).toBe(join(dir, 'hub.key'));
    const fromEnv = resolveRelayConfig({
      cwd: dir,
      env: { TUNNEL_RELAY_MESH_KEY_FILE: keyFile, TUNNEL_RELAY_MESH_URL: 'https://10.1.2.3:8443' },
      flags: { store: PG, listen: '0.0.0.0:8443' },
    });
    expect(fromEnv.mesh.url).toBe('https://10.1.2.3:8443');
    expect(JSON.stringify(fromEnv)).not.toContain(KEY);
  });
});

describe('meshOrigin', () => {
  const key = new MeshKey(Buffer.from(KEY));

  it('no header: a client; the right key: mesh; anything else, or no mesh key here: MESH_UNAUTHENTICATED', () => {
    const stats = { accepted: 0, refused: 0 };
    expect(meshOrigin(key, {}, stats)).toBe('client');
    expect(meshOrigin(key, { [MESH_KEY_HEADER]: meshHeaderValue(key) }, stats)).toBe('mesh');
    for (const [k, value] of [
      [key, ''],
      [key, KEY],
      [key, `${meshHeaderValue(key)}x`],
      [null, meshHeaderValue(key)],
    ] as const) {
      expect(() => meshOrigin(k, { [MESH_KEY_HEADER]: value }, stats)).toThrow(
        expect.objectContaining({ code: 'MESH_UNAUTHENTICATED' }),
      );
    }
    expect(stats).toEqual({ accepted: 1, refused: 4 });
  });

  it('any header value other than the key is refused, and the message never carries either', () => {
    let refusal = '';
    try {
      meshOrigin(key, { [MESH_KEY_HEADER]: 'x' });
    } catch (err) {
      refusal = (err as Error).message;
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (value) => {
        fc.pre(value !== meshHeaderValue(key));
        try {
          meshOrigin(key, { [MESH_KEY_HEADER]: value });
          throw new Error('accepted a forged header');
        } catch (err) {
          expect(isTunnelError(err, 'MESH_UNAUTHENTICATED')).toBe(true);
          expect((err as Error).message).not.toContain(meshHeaderValue(key));
          // One fixed message whatever was sent: nothing of the value is echoed.
          expect((err as Error).message).toBe(refusal);
        }
      }),
      { numRuns: 300 },
    );
  });
});
