/**
 * The cleanup registry's last line of defence: a test process that exits without cleaning up, or
 * is killed by SIGTERM / SIGINT, still removes its namespaces and processes. The fixture is bundled
 * to plain JS with rolldown (already installed with vitest) and run as a real child process.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupAll,
  integrationProblems,
  listNetns,
  pidAlive,
  requireIntegrationPrivileges,
  waitFor,
} from './helpers/index.js';

const here = dirname(fileURLToPath(import.meta.url));
let dir: string;
let bundle: string;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip', 'sleep']);
  dir = mkdtempSync(join(tmpdir(), 'exit-fixture-'));
  bundle = join(dir, 'exit-fixture.mjs');
  await build({
    input: join(here, 'helpers/fixtures/exit-fixture.ts'),
    platform: 'node',
    output: { file: bundle, format: 'esm' },
    logLevel: 'silent',
  });
  await build({
    input: join(here, 'helpers/fixtures/privileges-fixture.ts'),
    platform: 'node',
    output: { file: join(dir, 'privileges-fixture.mjs'), format: 'esm' },
    logLevel: 'silent',
  });
  chmodSync(dir, 0o755);
});

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await cleanupAll();
});

async function runFixture(mode: 'exit' | 'wait', signal?: NodeJS.Signals) {
  const child = spawn(process.execPath, [bundle, mode], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, sig) => r({ code, signal: sig })),
  );
  try {
    await waitFor(() => out.includes('\n'), 15_000, `fixture output (stderr: ${err})`);
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  const info = JSON.parse(out.split('\n')[0]!) as { netns: string; pid: number; outsidePid: number };
  expect(await listNetns()).toContain(info.netns);
  expect(pidAlive(info.pid)).toBe(true);
  if (signal) child.kill(signal);
  else child.stdin.write('exit now\n');
  const result = await exited;
  return { info, result };
}

describe('cleanup registry on abnormal exits', () => {
  it('process.exit() without cleanupAll removes the namespace and kills the processes', async () => {
    const { info, result } = await runFixture('exit');
    expect(result.code).toBe(0);
    expect(await listNetns()).not.toContain(info.netns);
    await waitFor(() => !pidAlive(info.pid) && !pidAlive(info.outsidePid), 5000, 'fixture processes to die');
  });

  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    it(`${sig} removes the namespace, kills the processes, and the signal still ends the process`, async () => {
      const { info, result } = await runFixture('wait', sig);
      expect(result.signal).toBe(sig);
      expect(await listNetns()).not.toContain(info.netns);
      await waitFor(
        () => !pidAlive(info.pid) && !pidAlive(info.outsidePid),
        5000,
        'fixture processes to die',
      );
    });
  }
});

describe('privilege check', () => {
  it('fails (never skips) with a clear message when not root, in CI too', () => {
    const r = spawnSync(process.execPath, [join(dir, 'privileges-fixture.mjs')], {
      uid: 65534,
      gid: 65534,
      env: { PATH: process.env.PATH ?? '', CI: 'true' },
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(r.status).toBe(3);
    expect(r.stdout).toMatch(/integration tests cannot run in CI/);
    expect(r.stdout).toMatch(/not running as root/);
    expect(r.stdout).toMatch(/apt-get install/);
  });

  it('names each missing tool', () => {
    expect(integrationProblems(['ip', 'no-such-tool-xyz'])).toEqual(['`no-such-tool-xyz` is not installed']);
    expect(() => requireIntegrationPrivileges(['no-such-tool-xyz'])).toThrow(/no-such-tool-xyz/);
  });
});
