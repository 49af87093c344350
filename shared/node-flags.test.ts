import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from './node-flags.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const read = (p: string): string => readFileSync(join(root, p), 'utf8');
const shebang = `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`;

describe('Node flags of the binaries', () => {
  it.each(['relay/cli/main.ts', 'tunnel-client/cli/main.ts'])(
    '%s starts with the #! line carrying them',
    (p) => {
      expect(read(p).split('\n')[0]).toBe(shebang);
    },
  );

  it('the container image and the agent manifest start node with them', () => {
    const entry = read('deploy/Dockerfile')
      .split('\n')
      .find((l) => l.startsWith('ENTRYPOINT '));
    expect(JSON.parse(entry?.slice('ENTRYPOINT '.length) ?? 'null')).toEqual(['node', ...NODE_FLAGS]);
    const starts = read('deploy/kubernetes/agent.yaml').match(/exec node[^\n]*?dist\//g) ?? [];
    expect(starts.length).toBeGreaterThan(0);
    for (const s of starts) expect(s).toBe(`exec node ${NODE_FLAGS.join(' ')} dist/`);
  });

  it('npm scripts that start a binary with node pass them', () => {
    const scripts = Object.values(
      (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts,
    );
    const starts = scripts.filter((s) => /node [^&|;]*dist\/(relay|tunnel-client)\/cli\/main\.js/.test(s));
    expect(starts.length).toBeGreaterThan(0);
    for (const s of starts) expect(s).toMatch(new RegExp(`^node ${NODE_FLAGS.join(' ')} dist/`));
  });

  it('the #! line runs node with them (env -S splits them; node accepts them)', () => {
    // What the kernel does with a #! line: the interpreter, its one argument string, then the script.
    const dir = mkdtempSync(join(tmpdir(), 'node-flags-'));
    try {
      const script = join(dir, 'argv.mjs');
      writeFileSync(script, 'process.stdout.write(JSON.stringify(process.execArgv));\n');
      const [, interpreter = '', arg = ''] = /^#!(\S+) (.*)$/.exec(shebang) ?? [];
      const r = spawnSync(interpreter, [arg, script], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout)).toEqual(NODE_FLAGS);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
