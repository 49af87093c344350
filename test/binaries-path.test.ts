/**
 * The binaries as the README's set-up puts them on PATH (`npm link`, here into a throw-away prefix with
 * the same `npm install -g` of this checkout), run by name: `version` / `--version` print the package
 * version, the Node version and the WireGuard cipher; the relay's printed "next" lines run as printed
 * and create a cluster; an agent reporting an older version shows as outdated on the hub.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { api } from './abuse/relay-fixture.js';
import { buildIfStale, cleanEnv, cleanup, Proc, ROOT, tempDir } from './cli-harness.js';

const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
let bin: string;

beforeAll(() => {
  buildIfStale();
  const prefix = tempDir('binaries-path-');
  execFileSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--offline', '--no-audit', '--no-fund', ROOT],
    {
      stdio: 'pipe',
      timeout: 60_000,
    },
  );
  bin = join(prefix, 'bin');
}, 120_000);

afterAll(cleanup);

/** Runs `command` in sh with the linked binaries first on PATH. */
function sh(command: string, env: Record<string, string> = {}) {
  const r = spawnSync('sh', ['-c', command], {
    env: { ...cleanEnv(env), PATH: `${bin}:${process.env.PATH}` },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('binaries on PATH', () => {
  it.each(['tunnel-relay', 'tunnel-client'])(
    '%s version, --version and -V print version, Node and cipher',
    (name) => {
      for (const args of ['version', '--version', '-V']) {
        const r = sh(`${name} ${args}`, { TUNNEL_WG_AEAD: 'node:crypto' });
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toBe(
          `${name} ${VERSION}\nnode ${process.version}\nwireguard cipher: ChaCha20-Poly1305 via node:crypto\n`,
        );
      }
      const json = sh(`${name} version --output json`, { TUNNEL_WG_AEAD: 'sodium-native' });
      expect(JSON.parse(json.stdout)).toEqual({
        program: name,
        version: VERSION,
        node: process.version,
        wireguardCipher: 'sodium-native',
      });
    },
  );

  it("the relay's next lines run as printed, and an older agent shows as outdated", async () => {
    const relay = new Proc(
      join(bin, 'tunnel-relay'),
      [
        'serve',
        '--data-dir',
        tempDir('binaries-relay-'),
        '--listen',
        '127.0.0.1:0',
        '--udp-port',
        'off',
        '--stun-port',
        'off',
      ],
      cleanEnv(),
    );
    await relay.waitFor((p) => p.stdout.includes('tunnel-relay cluster create'), 20_000, 'the next lines');
    const lines = relay.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith('next'));
    const printed = lines.slice(at + 1, at + 3).map((l) => l.trim());
    expect(printed[1]).toBe('tunnel-relay cluster create edge-1');
    const created = sh(printed.join('\n'));
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('cluster edge-1 created');

    const env = Object.fromEntries(
      (printed[0] ?? '')
        .replace(/^export /, '')
        .split(' ')
        .map((kv) => kv.split('=', 2) as [string, string]),
    );
    const url = env.TUNNEL_RELAY_URL ?? '';
    const key = env.TUNNEL_ACCESS_KEY ?? '';
    for (const [name, agentVersion] of [
      ['old-agent', '0.0.1'],
      ['current-agent', VERSION],
    ] as const) {
      const c = await api(url, 'POST', '/api/v1/clusters', { token: key, body: { name } });
      const r = await api(url, 'POST', '/api/v1/register', {
        token: c.body.bootstrap.psk,
        body: { cluster: name, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion },
      });
      expect(r.status, r.text).toBe(201);
    }
    const old = sh('tunnel-relay cluster get old-agent', env);
    expect(old.stdout).toContain('agent version: 0.0.1 (older than the relay: upgrade the agent)');
    const current = JSON.parse(sh('tunnel-relay cluster get current-agent --output json', env).stdout);
    expect(current).toMatchObject({ agentVersion: VERSION, agentOutdated: false });
    expect(JSON.parse(sh('tunnel-relay cluster get old-agent --output json', env).stdout).agentOutdated).toBe(
      true,
    );
    expect(await relay.stop()).toBe(0);
  });
});
