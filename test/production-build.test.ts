/**
 * What the production build (tsconfig.build.json: `npm run build`, the image's build stage) compiles: the three
 * production trees and what they import, never benchmarks, the demo or test code.
 */
import { execFileSync } from 'node:child_process';
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli-harness.js';

function compiledFiles(project: string): string[] {
  const out = execFileSync(
    process.execPath,
    [`${ROOT}/node_modules/typescript/bin/tsc`, '-p', project, '--listFilesOnly'],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  return out
    .split('\n')
    .filter((line) => line.startsWith(ROOT) && !line.includes('/node_modules/'))
    .map((line) => relative(ROOT, line));
}

describe('production build', () => {
  it('compiles the relay and the agent without bench/, demo/ or test code', () => {
    const files = compiledFiles('tsconfig.build.json');
    expect(files).toContain('relay/cli/main.ts');
    expect(files).toContain('tunnel-client/cli/main.ts');
    const strays = files.filter((file) => /^(bench|demo|test)\/|\.test\.ts$/.test(file));
    expect(strays).toEqual([]);
  }, 150_000);

  it('leaves the benchmarks and the demo to the tools build', () => {
    const files = compiledFiles('tsconfig.tools.json');
    expect(files).toContain('bench/run.ts');
    expect(files).toContain('demo/main.ts');
  }, 150_000);
});
