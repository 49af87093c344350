import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from './node-flags.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (p: string): string => readFileSync(join(root, p), 'utf8');
const shebang = `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`;

describe('Node flags of the binaries', () => {
  it.each(['relay/cli/main.ts', 'tunnel-client/cli/main.ts'])(
    '%s starts with the #! line carrying them',
    (p) => {
      expect(read(p).split('\n')[0]).toBe(shebang);
    },
  );

  it('the image and the generated manifests start the binaries by name, so their #! line applies', () => {
    const docker = read('deploy/Dockerfile');
    const links = docker.match(/ln -s \/app\/(dist\/[\w/-]+\/main\.js) \/usr\/local\/bin\/([\w-]+)/g) ?? [];
    expect(links.map((l) => l.split(' ').at(-1))).toEqual([
      '/usr/local/bin/tunnel-relay',
      '/usr/local/bin/tunnel-client',
    ]);
    const cmd = docker.split('\n').find((l) => l.startsWith('CMD '));
    expect((JSON.parse(cmd?.slice('CMD '.length) ?? '[]') as string[])[0]).toBe('tunnel-relay');
    // Nothing in the image or the manifests calls node itself (which would drop the flags).
    expect(docker).not.toMatch(/\bnode\s+(?:\/app\/)?dist\//);
    const manifests = ['agent.yaml', 'relay.yaml', 'relay-postgres.yaml'].map((f) =>
      read(`deploy/kubernetes/${f}`),
    );
    for (const m of manifests) expect(m).not.toMatch(/\bnode\s+(?:\/app\/)?dist\//);
    expect(manifests[0]).toMatch(/exec tunnel-client run /);
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
