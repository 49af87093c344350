/**
 * The binaries load a command's heavy modules only when that command runs: an admin command, a usage error or
 * `--help` starts without the relay server, the data plane, the store drivers and the Kubernetes object models.
 * Each run records every module the loader loads (a module hook in the child) and checks the list.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, CLIENT_BIN, cleanEnv, RELAY_BIN, tempDir } from './cli-harness.js';

let hookDir: string;

beforeAll(() => {
  buildIfStale();
  hookDir = tempDir('cli-startup-');
  writeFileSync(
    join(hookDir, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.MODULE_LIST, url + '\\n');
  return next(url, context);
}
`,
  );
  writeFileSync(
    join(hookDir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(hookDir, 'hooks.mjs')).href)});\n`,
  );
});

/** The modules `bin args` loads (file URLs), whatever its exit code. */
function modulesLoaded(bin: string, args: string[]): string[] {
  const list = join(hookDir, `modules-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(list, '');
  try {
    execFileSync(process.execPath, ['--import', join(hookDir, 'register.mjs'), bin, ...args], {
      env: cleanEnv({ MODULE_LIST: list }),
      stdio: 'ignore',
      timeout: 20_000,
    });
  } catch (err) {
    if ((err as { status?: number | null }).status == null) throw err; // killed by the timeout, not an exit code
  }
  return readFileSync(list, 'utf8').split('\n').filter(Boolean);
}

const HEAVY = [
  '/dist/relay/start/server.js',
  '/dist/relay/data/',
  '/dist/tunnel-client/session/',
  '/dist/shared/net/wireguard/device.js',
  '/dist/shared/net/arq/',
  '/dist/shared/net/derp/',
  '/dist/shared/net/mux/mux-session.js',
  '/node_modules/fastify/',
  '/node_modules/pg/',
  '/node_modules/better-sqlite3/',
  '/node_modules/kubernetes-models/',
];

const heavyIn = (modules: string[]): string[] => modules.filter((m) => HEAVY.some((h) => m.includes(h)));

describe('what a command loads at start', () => {
  it.each([
    { name: 'tunnel-relay', bin: RELAY_BIN, args: ['cluster', 'list', '--help'] },
    {
      name: 'tunnel-relay',
      bin: RELAY_BIN,
      args: ['manifests', 'agent', '--cluster', 'Bad_Name', '--relay', 'https://r:443'],
    },
    { name: 'tunnel-relay', bin: RELAY_BIN, args: ['cluster', 'list'] },
    { name: 'tunnel-client', bin: CLIENT_BIN, args: ['status', '--help'] },
    { name: 'tunnel-client', bin: CLIENT_BIN, args: ['join', '--no-such-flag'] },
  ])('$name $args: none of the relay, data plane, store or object-model modules', ({ bin, args }) => {
    const modules = modulesLoaded(bin, args);
    expect(modules.length).toBeGreaterThan(10);
    expect(heavyIn(modules)).toEqual([]);
  });

  it('the command that needs them loads them: manifests printing and the relay server', () => {
    const printed = modulesLoaded(RELAY_BIN, [
      'manifests',
      'agent',
      '--cluster',
      'edge-1',
      '--relay',
      'https://r:443',
    ]);
    expect(printed.some((m) => m.includes('/node_modules/kubernetes-models/'))).toBe(true);
    const serve = modulesLoaded(RELAY_BIN, ['serve', '--listen', 'not-an-address']);
    expect(serve.some((m) => m.includes('/dist/relay/start/server.js'))).toBe(true);
    expect(serve.some((m) => m.includes('/dist/relay/data/proxy/proxy-plugin.js'))).toBe(true);
  });
});
