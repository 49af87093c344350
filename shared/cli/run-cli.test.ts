import { Writable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { TunnelError } from '../errors.js';
import { parseClusterName } from './parsers.js';
import { runCli } from './run-cli.js';

function sink(): { stream: Writable; text: () => string } {
  let buf = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      buf += String(chunk);
      cb();
    },
  });
  return { stream, text: () => buf };
}

function program(action: () => Promise<void> | void): Command {
  const p = new Command('tool');
  p.command('go')
    .option('--name <name>', 'a cluster name', (v: string) => parseClusterName(v))
    .action(action);
  return p;
}

async function run(args: string[], action: () => Promise<void> | void = () => {}) {
  const err = sink();
  const code = await runCli(program(action), ['node', 'tool', ...args], { stderr: err.stream });
  return { code, stderr: err.text() };
}

describe('runCli', () => {
  it('exits 0 on success and on --help', async () => {
    expect((await run(['go'])).code).toBe(0);
    expect((await run(['go', '--help'])).code).toBe(0);
  });

  it('exits 2 with one error line for an unknown flag or command', async () => {
    for (const args of [['go', '--nope'], ['nope']]) {
      const r = await run(args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error BAD_INPUT: .*nope.*\n$/);
    }
  });

  it('exits 2 for a bad flag value, naming it', async () => {
    const r = await run(['go', '--name', 'Bad_Name']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'error INVALID_NAME: cluster name "Bad_Name" is not a DNS-1123 label: use 1-63 characters of a-z, 0-9 and \'-\', starting and ending with a letter or digit\n',
    );
  });

  it('exits 1 for runtime TunnelErrors and unexpected errors, without a stack', async () => {
    const r = await run(['go'], async () => {
      throw new TunnelError('CLUSTER_DENIED', 'cluster edge-1 was denied');
    });
    expect(r).toEqual({ code: 1, stderr: 'error CLUSTER_DENIED: cluster edge-1 was denied\n' });
    const u = await run(['go'], () => {
      throw new Error('boom\nsecond line');
    });
    expect(u).toEqual({ code: 1, stderr: 'error INTERNAL: boom second line\n' });
  });
});
