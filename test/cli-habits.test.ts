/**
 * CLI habits of both binaries, through the real processes: `-o json`, misspelt flags named with a suggestion and
 * the failing subcommand's own help, a flag beating the environment (--ca-file over TUNNEL_RELAY_CA_PIN), JSON
 * errors on stdout with --output json, and shell completion sourced into a real bash.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLIENT_BIN, cleanEnv, RELAY_BIN, run, tempDir } from './cli-harness.js';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'cli-habits' });

/** A pin that parses but is not the relay's. */
const WRONG_PIN = `sha256:${'ab'.repeat(32)}`;

const relayCli = (args: string[], env: Record<string, string> = {}) => run(RELAY_BIN, args, cleanEnv(env));
const clientCli = (args: string[], env: Record<string, string> = {}) => run(CLIENT_BIN, args, cleanEnv(env));

describe('usage errors', () => {
  it('names a misspelt flag with a suggestion instead of a missing required option', async () => {
    const r = await clientCli(['join', '--relya', 'https://relay.example', '--cluster', 'edge-1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error BAD_INPUT: unknown option '--relya' (did you mean --relay?) (see tunnel-client join --help)\n",
    );
  });

  it('still reports a required option that is really missing', async () => {
    const r = await clientCli(['join', '--cluster', 'edge-1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error BAD_INPUT: required option '--relay <url>' not specified (see tunnel-client join --help)\n",
    );
  });

  it("points at the failing subcommand's own help", async () => {
    const r = await relayCli(['cluster', 'create', 'edge-1', '--grup', 'eu']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "error BAD_INPUT: unknown option '--grup' (did you mean --group?) (see tunnel-relay cluster create --help)\n",
    );
    const cmd = await relayCli(['cluster', 'creat']);
    expect(cmd.stderr).toBe(
      "error BAD_INPUT: unknown command 'creat' (did you mean create?) (see tunnel-relay cluster --help)\n",
    );
  });
});

describe('-o json', () => {
  it('is the short form of --output on both binaries', async () => {
    for (const bin of [RELAY_BIN, CLIENT_BIN]) {
      const r = await run(bin, ['version', '-o', 'json'], cleanEnv());
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ version: expect.any(String) });
    }
    const listed = await relayCli(['cluster', 'list', '-o', 'json', '--ca-pin', relay.ready.caPin], {
      TUNNEL_RELAY_URL: relay.ready.url,
      TUNNEL_ACCESS_KEY: relay.ready.adminKey ?? '',
    });
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual({ items: [] });
  });
});

describe('JSON errors with --output json', () => {
  it('prints {"error":{code,message}} on stdout for a runtime failure, a usage error and a bad value', async () => {
    const runtime = await relayCli(['cluster', 'list', '--output', 'json', '--ca-pin', WRONG_PIN], {
      TUNNEL_RELAY_URL: relay.ready.url,
      TUNNEL_ACCESS_KEY: relay.ready.adminKey ?? '',
    });
    expect(runtime.code).toBe(1);
    expect(JSON.parse(runtime.stdout)).toEqual({
      error: { code: 'CA_PIN_MISMATCH', message: expect.stringContaining('sha256') },
    });
    expect(runtime.stderr).toMatch(/^error CA_PIN_MISMATCH: /);

    const usage = await clientCli(['status', '-o', 'json', '--bogus']);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stdout)).toEqual({
      error: { code: 'BAD_INPUT', message: "unknown option '--bogus' (see tunnel-client status --help)" },
    });

    const bad = await clientCli(['join', '--output=json', '--relay', 'ftp://x', '--cluster', 'edge-1']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error.code).toBe('BAD_INPUT');
  });

  it("prints it on one line, so it also ends serve's JSON-lines stream", async () => {
    const r = await relayCli([
      'serve',
      '-o',
      'json',
      '--listen',
      '127.0.0.1:99999',
      '--data-dir',
      tempDir('habits-'),
    ]);
    expect(r.code).toBe(2);
    expect(r.stdout.split('\n')).toHaveLength(2);
    expect(JSON.parse(r.stdout)).toEqual({
      error: {
        code: 'BAD_CONFIG',
        message: 'listen (--listen): expected a port number 0-65535, got "99999"',
      },
    });
  });

  it('prints nothing on stdout for a failure in text output', async () => {
    const r = await clientCli(['status', '--bogus']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });
});

describe('a flag beats the environment', () => {
  const base = () => ({ TUNNEL_RELAY_URL: relay.ready.url, TUNNEL_ACCESS_KEY: relay.ready.adminKey ?? '' });

  it('--ca-file is used when TUNNEL_RELAY_CA_PIN is set', async () => {
    const r = await relayCli(['cluster', 'list', '-o', 'json', '--ca-file', relay.certFile], {
      ...base(),
      TUNNEL_RELAY_CA_PIN: WRONG_PIN,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('--ca-pin is used when TUNNEL_RELAY_CA_FILE is set', async () => {
    const r = await relayCli(['cluster', 'list', '-o', 'json', '--ca-pin', relay.ready.caPin], {
      ...base(),
      TUNNEL_RELAY_CA_FILE: '/nonexistent/ca.pem',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });

  it('two flags, or two variables, still conflict', async () => {
    const flags = await relayCli(
      ['cluster', 'list', '--ca-file', relay.certFile, '--ca-pin', relay.ready.caPin],
      base(),
    );
    expect(flags.stderr).toBe('error BAD_INPUT: give either --ca-pin or --ca-file, not both\n');
    const vars = await relayCli(['cluster', 'list'], {
      ...base(),
      TUNNEL_RELAY_CA_FILE: relay.certFile,
      TUNNEL_RELAY_CA_PIN: relay.ready.caPin,
    });
    expect(vars.stderr).toBe('error BAD_INPUT: give either --ca-pin or --ca-file, not both\n');
  });
});

/** Sources `BIN completion SHELL` in a real bash and prints what it completes for each line of words. */
function complete(bin: string, shell: 'bash' | 'zsh', lines: readonly string[][]): string[] {
  const name = bin === RELAY_BIN ? 'tunnel-relay' : 'tunnel-client';
  const fn = `_${name.replace('-', '_')}`;
  const script = [
    // zsh's bashcompinit is stood in for: the rest of the zsh script is the bash one.
    'autoload() { :; }; bashcompinit() { :; }',
    `source <("${process.execPath}" "${bin}" completion ${shell})`,
    `comp() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); ${fn}; echo "\${COMPREPLY[*]}"; }`,
    ...lines.map((words) => `comp ${[name, ...words].map((w) => `'${w}'`).join(' ')}`),
  ].join('\n');
  const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 20_000, env: cleanEnv() });
  expect(r.stderr).toBe('');
  return r.stdout.split('\n').slice(0, lines.length);
}

describe('shell completion', () => {
  it('tunnel-relay completes subcommands, flags and flag values from the program', async () => {
    expect(
      complete(RELAY_BIN, 'bash', [
        ['clu'],
        ['cluster', ''],
        ['cluster', 'create', '--disp'],
        ['cluster', 'list', '--server', 'https://x', '-o', ''],
        ['--output', 'json', 'cluster', 'list', '--out'],
        ['completion', ''],
      ]),
    ).toEqual([
      'cluster',
      'create list get accept deny delete rotate-psk agents',
      '--display-name',
      'json text',
      '--output',
      'bash zsh',
    ]);
  });

  it('tunnel-client completes the same way, in bash and through the zsh script', async () => {
    for (const shell of ['bash', 'zsh'] as const) {
      expect(complete(CLIENT_BIN, shell, [['jo'], ['join', '--rel'], ['join', '--egress', '']])).toEqual([
        'join',
        '--relay',
        '443-only auto',
      ]);
    }
  });

  it('the zsh script loads bashcompinit first', async () => {
    const r = await clientCli(['completion', 'zsh']);
    expect(r.stdout.split('\n')[1]).toBe('autoload -U +X bashcompinit && bashcompinit');
    expect(r.stdout).toContain('complete -F _tunnel_client tunnel-client');
  });
});
