/**
 * deploy/Dockerfile without a Docker daemon: the build stage's COPY list, copied alone into an empty
 * directory, must compile (tsc -p tsconfig.build.json) into binaries that run and build the web console; the runtime stage must be
 * a slim Node base, run as a non-root uid under tini, keep dev dependencies out (npm prune --omit=dev)
 * and take nothing from bench/, demo/ or test/.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanup, ROOT, tempDir } from './cli-harness.js';

const dockerfile = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
/** Instructions with their continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const stageStarts = instructions.flatMap((l, i) => (l.startsWith('FROM ') ? [i] : []));
const buildStage = instructions.slice(stageStarts[0], stageStarts[1]);
const runtimeStage = instructions.slice(stageStarts[1]);
const arg = (name: string) => instructions.find((l) => l.startsWith(`ARG ${name}=`))?.split('=')[1] ?? '';

afterAll(cleanup);

describe('deploy/Dockerfile', () => {
  it('the build stage COPY list alone compiles into binaries that run', () => {
    const dir = tempDir('dockerfile-context-');
    for (const line of buildStage.filter((l) => l.startsWith('COPY '))) {
      const words = line.split(/\s+/).slice(1);
      for (const src of words.slice(0, -1)) cpSync(join(ROOT, src), join(dir, src), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: dir,
        stdio: 'pipe',
        timeout: 180_000,
      },
    );
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '--config', 'console/vite.config.ts'],
      { cwd: dir, stdio: 'pipe', timeout: 180_000 },
    );
    expect(readFileSync(join(dir, 'dist/console/index.html'), 'utf8')).toContain('/ui/assets/');
    expect(runtimeStage.some((l) => l === 'COPY --from=build /app/dist/console dist/console')).toBe(true);
    for (const bin of ['dist/relay/cli/main.js', 'dist/tunnel-client/cli/main.js']) {
      const out = execFileSync(process.execPath, [join(dir, bin), 'version'], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(out).toMatch(/^tunnel-(relay|client) \d+\.\d+\.\d+\n/);
    }
  }, 240_000);

  it('runs from a slim Node LTS base as a non-root uid under tini, without dev dependencies or bench/demo/test', () => {
    expect(arg('NODE_IMAGE')).toMatch(/^node:(20|22|24)-[a-z]+-slim$/);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a Dockerfile ARG reference, not a template
    expect(runtimeStage[0]).toBe('FROM ${NODE_IMAGE}');
    const user = runtimeStage.find((l) => l.startsWith('USER '))?.split(/\s+/)[1] ?? 'root';
    expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(runtimeStage.find((l) => l.startsWith('ENTRYPOINT '))).toBe('ENTRYPOINT ["/usr/bin/tini", "--"]');
    expect(buildStage.some((l) => /npm prune --omit=dev/.test(l))).toBe(true);
    const copied = runtimeStage.filter((l) => l.startsWith('COPY ')).join('\n');
    expect(copied).not.toMatch(/\b(bench|demo|test)\b/);
    expect(buildStage.filter((l) => l.startsWith('COPY ')).join('\n')).not.toMatch(/\b(bench|demo|test)\b/);
  });
});
