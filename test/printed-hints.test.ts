/**
 * Every hint the programs print is runnable as printed. This follows the README's flows (docs/CLI.md) with the real
 * binaries on PATH under their linked names, the way a newcomer would: `serve`, its "next" lines, `cluster create`, the
 * join command, `join --wait`, a denied and a deleted cluster, a second join into a used state dir, an org-wide
 * bootstrap key, `cluster get` and `kubeconfig`. Each step's output is parsed for the commands it tells the user to run
 * (indented command lines, and commands quoted in '...' or `...`), and each is run in a shell as printed: one-shot
 * commands must exit 0; `tunnel-client run` and a join without --wait must get the agent connected. The agent uses a
 * non-default --state-dir in one flow and the default one in another, so the hints must carry --state-dir exactly
 * when it is needed. (A 10 s lease, so a denied or deleted agent hears it within seconds.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { buildIfStale, CLIENT_BIN, cleanEnv, cleanup, RELAY_BIN, tempDir } from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';

/** A command the programs printed for the user to run. */
type Hint = string;

const HINT_START = /^(?:export |[A-Z_]+=\S+ )*(?:tunnel-relay|tunnel-client) |^export |^\{ echo /;

/** The commands in `output`: whole indented lines, and commands quoted in '...' or `...` inside a line. */
function hintsIn(output: string): Hint[] {
  const found: Hint[] = [];
  for (const line of output.split('\n')) {
    const indented = /^ {2,}(\S.*)$/.exec(line)?.[1];
    if (indented !== undefined && HINT_START.test(indented)) {
      found.push(indented.trim());
      continue;
    }
    for (const m of line.matchAll(
      /'((?:tunnel-relay|tunnel-client|mv) [^']*)'|`((?:tunnel-relay|tunnel-client) [^`]*)`/g,
    )) {
      found.push(m[1] ?? m[2] ?? '');
    }
  }
  return [...new Set(found)];
}

let home: string;
let bin: string;
let exports: string[] = [];
const background = new Set<ChildProcess>();

/** The environment of the user's shell: the linked names on PATH, a HOME of its own, no TUNNEL_* settings. */
function shellEnv(): NodeJS.ProcessEnv {
  return cleanEnv({ HOME: home, PATH: `${bin}:${process.env.PATH ?? ''}` });
}

interface Shell {
  proc: ChildProcess;
  out: string;
  exited: Promise<number | null>;
}

/** Runs `command` in bash after the `export` lines run so far (one shell session, as the user has). */
function shell(command: string): Shell {
  const script = [...exports, command].join('\n');
  // Its own process group, so stopping it stops the command it runs too.
  const proc = spawn('/bin/bash', ['-c', script], {
    env: shellEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  background.add(proc);
  const s: Shell = { proc, out: '', exited: Promise.resolve(null) };
  proc.stdout?.on('data', (c: Buffer) => {
    s.out += c.toString();
  });
  proc.stderr?.on('data', (c: Buffer) => {
    s.out += c.toString();
  });
  s.exited = new Promise((r) =>
    proc.on('close', (code) => {
      background.delete(proc);
      r(code);
    }),
  );
  return s;
}

async function runToEnd(command: string, ms = 30_000): Promise<{ code: number | null; out: string }> {
  const s = shell(command);
  const timer = setTimeout(() => signal(s, 'SIGKILL'), ms);
  const code = await s.exited;
  clearTimeout(timer);
  return { code, out: s.out };
}

async function waitOutput(s: Shell, pattern: RegExp, ms: number, what: string): Promise<void> {
  await pollUntil({
    what,
    read: () => s.out,
    until: (out) => pattern.test(out),
    timeoutMs: ms,
    intervalMs: 100,
  });
}

async function connected(cluster: string, ms = 20_000): Promise<void> {
  await pollUntil({
    what: `${cluster} connected`,
    read: async () =>
      JSON.parse((await runToEnd(`tunnel-relay cluster get ${cluster} -o json`)).out).connected,
    until: (now) => now === true,
    timeoutMs: ms,
    intervalMs: 250,
  });
}

function signal(s: Shell, sig: NodeJS.Signals): void {
  if (s.proc.pid !== undefined && s.proc.exitCode === null) {
    try {
      process.kill(-s.proc.pid, sig);
    } catch {
      // already gone
    }
  }
}

async function stop(s: Shell): Promise<void> {
  signal(s, 'SIGTERM');
  const timer = setTimeout(() => signal(s, 'SIGKILL'), 10_000);
  await s.exited;
  clearTimeout(timer);
}

const runsForever = (h: Hint) =>
  /tunnel-client run\b/.test(h) || (/tunnel-client join\b/.test(h) && !/--wait\b/.test(h));

/**
 * Runs a hint as printed: an `export` line joins the shell session; a long-running agent command must get `cluster`
 * connected (then it is stopped); anything else must exit 0. Returns the output of one-shot commands.
 */
async function runHint(h: Hint, cluster: string): Promise<string> {
  if (h.startsWith('export ')) {
    expect(h).toMatch(/^export( [A-Z_]+=\S+)+$/);
    const check = await runToEnd(h);
    expect(check.code, check.out).toBe(0);
    exports.push(h);
    return '';
  }
  if (runsForever(h)) {
    const agent = shell(h);
    try {
      await connected(cluster);
    } finally {
      await stop(agent);
    }
    return agent.out;
  }
  const r = await runToEnd(h);
  expect(r.code, `${h}\n${r.out}`).toBe(0);
  return r.out;
}

function link(name: string, target: string): void {
  const file = join(bin, name);
  writeFileSync(file, `#!/bin/sh\nexec '${process.execPath}' ${NODE_FLAGS.join(' ')} '${target}' "$@"\n`);
  chmodSync(file, 0o755);
}

let relay: Shell;

beforeAll(async () => {
  buildIfStale();
  const root = tempDir('printed-hints-');
  home = join(root, 'home');
  bin = join(root, 'bin');
  mkdirSync(home);
  mkdirSync(bin);
  link('tunnel-relay', RELAY_BIN);
  link('tunnel-client', CLIENT_BIN);
  exports = [];
  relay = shell(
    `tunnel-relay serve --data-dir ${join(root, 'relay-data')} --listen 127.0.0.1:0 --udp-port off --stun-port off --lease-duration 10`,
  );
  await waitOutput(relay, /tunnel-relay cluster create edge-1\n/, 30_000, 'the next lines of serve');
}, 180_000);

afterAll(async () => {
  for (const p of background) if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL');
  await cleanup();
});

describe('the hints printed along the README flows run as printed', () => {
  let stateDir: string;

  it('serve: the export line and cluster create; create: the install and join commands', async () => {
    const next = hintsIn(relay.out);
    expect(next).toEqual([
      expect.stringMatching(/^export TUNNEL_RELAY_URL=/),
      'tunnel-relay cluster create edge-1',
    ]);
    await runHint(next[0]!, 'edge-1');
    const created = await runHint(next[1]!, 'edge-1');
    const printed = hintsIn(created);
    const joinHint = printed.find((h) => h.includes('tunnel-client join'));
    const install = printed.find((h) => h.startsWith('{ echo '));
    expect(joinHint).toMatch(
      /^TUNNEL_CLIENT_PSK=tpsk_\S+ tunnel-client join --relay https:\/\/127\.0\.0\.1:\d+ --cluster edge-1 --ca-pin sha256:[0-9a-f]{64}$/,
    );
    expect(install).toMatch(/\| kubectl apply -f -$/);
    // The install line up to kubectl (which needs a Kubernetes cluster) fetches the agent's manifests.
    const fetched = await runToEnd(install!.replace(/ \| kubectl apply -f -$/, ''));
    expect(fetched.code, fetched.out).toBe(0);
    expect(fetched.out).toContain('kind: StatefulSet');
    // The join command as printed, with a state dir of the user's choosing and --wait: its hint carries that dir.
    stateDir = join(home, 'agent state');
    const joined = await runToEnd(`${joinHint} --state-dir "${stateDir}" --wait`);
    expect(joined.code, joined.out).toBe(0);
    expect(joined.out).toContain('warning: no --upstream');
    const runHints = hintsIn(joined.out);
    expect(runHints).toEqual([`tunnel-client run --state-dir "${stateDir}"`]);
    await runHint(runHints[0]!, 'edge-1');
  }, 90_000);

  it('cluster get and kubeconfig: rotate-psk and token revoke', async () => {
    const got = await runHint('tunnel-relay cluster get edge-1', 'edge-1');
    const rotate = hintsIn(got);
    expect(rotate).toEqual(['tunnel-relay cluster rotate-psk edge-1']);
    await runHint(rotate[0]!, 'edge-1');
    const kubeconfig = await runHint('tunnel-relay kubeconfig edge-1', 'edge-1');
    const revoke = hintsIn(kubeconfig);
    expect(revoke).toEqual([expect.stringMatching(/^tunnel-relay token revoke \S+$/)]);
    await runHint(revoke[0]!, 'edge-1');
  }, 60_000);

  it('a denied cluster: accept, run again, or unjoin, each with the state dir', async () => {
    const agent = shell(`tunnel-client run --state-dir "${stateDir}"`);
    await connected('edge-1');
    await runHint('tunnel-relay cluster deny edge-1', 'edge-1');
    expect(await agent.exited).toBe(1);
    const hints = hintsIn(agent.out);
    expect(hints).toEqual([
      'tunnel-relay cluster accept edge-1',
      `tunnel-client run --state-dir "${stateDir}"`,
      `tunnel-client unjoin --state-dir "${stateDir}"`,
    ]);
    for (const h of hints) await runHint(h, 'edge-1');
  }, 90_000);

  it('an org-wide bootstrap key in the default state dir: join, accept; a second join: unjoin first', async () => {
    const created = await runHint('tunnel-relay token create --role bootstrap', 'edge-2');
    const joinHints = hintsIn(created);
    expect(joinHints).toEqual([
      expect.stringMatching(
        /^TUNNEL_CLIENT_PSK=trk_\S+ tunnel-client join --relay https:\/\/127\.0\.0\.1:\d+ --cluster edge-2 --ca-pin sha256:/,
      ),
    ]);
    const agent = shell(joinHints[0]!);
    try {
      await waitOutput(agent, /waiting for an administrator to run/, 20_000, 'the Pending line');
      const accept = hintsIn(agent.out);
      expect(accept).toEqual(['tunnel-relay cluster accept edge-2']);
      await runHint(accept[0]!, 'edge-2');
      await connected('edge-2');
    } finally {
      await stop(agent);
    }
    const again = await runToEnd(`${joinHints[0]!.replace('edge-2', 'edge-3')} --wait`);
    expect(again.code).toBe(1);
    const unjoin = hintsIn(again.out);
    expect(unjoin).toEqual(['tunnel-client unjoin']);
    await runHint(unjoin[0]!, 'edge-2');
  }, 90_000);

  it('a deleted cluster: unjoin, and cluster create prints a new join command', async () => {
    const created = hintsIn(await runHint('tunnel-relay cluster create edge-4', 'edge-4'));
    const joinHint = created.find((h) => h.includes('tunnel-client join'))!;
    const agent = shell(joinHint);
    await connected('edge-4');
    await runHint('tunnel-relay cluster delete edge-4', 'edge-4');
    expect(await agent.exited).toBe(1);
    const hints = hintsIn(agent.out);
    expect(hints).toEqual(['tunnel-client unjoin', 'tunnel-relay cluster create edge-4']);
    for (const h of hints) await runHint(h, 'edge-4');
  }, 90_000);
});
