import { Writable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { TunnelError } from '../../errors.js';
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

describe('runCli usage errors and JSON errors', () => {
  function nested(): Command {
    const p = new Command('tool');
    p.command('group')
      .command('go')
      .requiredOption('--relay <url>', 'a relay')
      .option('-o, --output <format>', 'output format')
      .action(() => {
        throw new TunnelError('CLUSTER_DENIED', 'cluster edge-1 was denied');
      });
    return p;
  }

  async function runNested(args: string[]) {
    const err = sink();
    const out = sink();
    const code = await runCli(nested(), ['node', 'tool', ...args], {
      stderr: err.stream,
      stdout: out.stream,
    });
    return { code, stderr: err.text(), stdout: out.text() };
  }

  it('names a misspelt flag before a missing required one, with the subcommand help', async () => {
    const r = await runNested(['group', 'go', '--relya', 'x']);
    expect(r).toEqual({
      code: 2,
      stderr:
        "error BAD_INPUT: unknown option '--relya' (did you mean --relay?) (see tool group go --help)\n",
      stdout: '',
    });
  });

  it('prints the error as JSON on stdout too when the command line asks for JSON', async () => {
    const r = await runNested(['group', 'go', '--relay', 'x', '-o', 'json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error CLUSTER_DENIED: cluster edge-1 was denied\n');
    expect(JSON.parse(r.stdout)).toEqual({
      error: { code: 'CLUSTER_DENIED', message: 'cluster edge-1 was denied' },
    });
    const usage = await runNested(['group', 'go', '--output=json']);
    expect(JSON.parse(usage.stdout)).toEqual({
      error: {
        code: 'BAD_INPUT',
        message: "required option '--relay <url>' not specified (see tool group go --help)",
      },
    });
  });
});
