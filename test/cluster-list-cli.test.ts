/**
 * `tunnel-relay cluster list` and `cluster accept` through the real binaries: an agent awaiting acceptance is told
 * apart from a cluster with no agent yet, display names and ages are shown (escaped), --status / --group filter,
 * and accepting a cluster no agent has registered for fails with NO_AGENT_WAITING.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_BIN, cleanEnv, run, tempDir } from './cli-harness.js';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'cluster-list' });
const admin = (...args: string[]) => relay.admin(...args);

interface Listed {
  items: { name: string; status: string; group: string }[];
}

beforeAll(async () => {
  const created = await admin(
    'cluster',
    'create',
    'fresh',
    '--display-name',
    'Edge \u001b[31mone',
    '--group',
    'eu',
  );
  expect(created.code, created.stderr).toBe(0);
  const token = JSON.parse(
    (await admin('token', 'create', '--role', 'bootstrap', '-o', 'json')).stdout,
  ).token;
  // An agent that registers with the org-wide token and gives up waiting: its cluster stays Pending.
  const agentDir = join(tempDir('cluster-list-agent-'), 'agent');
  const joined = await run(
    CLIENT_BIN,
    [
      'join',
      '--relay',
      relay.ready.url,
      '--cluster',
      'waiting',
      '--psk',
      token,
      '--ca-pin',
      relay.ready.caPin,
    ].concat(['--state-dir', agentDir, '--wait', '--wait-timeout', '1s']),
    cleanEnv(),
  );
  expect(joined.stderr).toMatch(/error TIMEOUT: cluster waiting is still Pending/);
}, 180_000);

describe('cluster list', () => {
  it('tells "awaiting acceptance" from "no agent yet", with display names and ages', async () => {
    const r = await admin('cluster', 'list');
    expect(r.code, r.stderr).toBe(0);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    expect(header).toMatch(
      /^NAME +DISPLAY NAME +GROUP +STATUS +STATE +AGENT +AVAILABLE +PATH +ADDRESS +LEASE RENEWED +AGE$/,
    );
    const fresh = rows.find((l) => l.startsWith('fresh '));
    const waiting = rows.find((l) => l.startsWith('waiting '));
    expect(fresh).toMatch(
      /^fresh +Edge \\u001b\[31mone +eu +Pending +Never connected +no agent yet +Unknown +none +- +- +\d+s$/,
    );
    expect(waiting).toMatch(
      /^waiting +waiting +default +Pending +Never connected +awaiting acceptance +Unknown +none +- +- +\d+s$/,
    );
  });

  it('filters by --status and --group, in text and JSON', async () => {
    const names = async (...args: string[]) =>
      (JSON.parse((await admin('cluster', 'list', '-o', 'json', ...args)).stdout) as Listed).items.map(
        (c) => c.name,
      );
    expect(await names()).toEqual(expect.arrayContaining(['fresh', 'waiting']));
    expect((await names('--status', 'Pending')).sort()).toEqual(['fresh', 'waiting']);
    expect(await names('--status', 'awaiting-acceptance')).toEqual(['waiting']);
    expect(await names('--status', 'no-agent')).toEqual(['fresh']);
    expect(await names('--group', 'eu')).toEqual(['fresh']);
    expect(await names('--group', 'eu', '--status', 'awaiting-acceptance')).toEqual([]);
    const text = await admin('cluster', 'list', '--status', 'denied');
    expect(text.stdout).toBe('no clusters\n');
    const bad = await admin('cluster', 'list', '--status', 'waiting');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      'error BAD_INPUT: --status "waiting" is not valid: expected one of accepted, pending, denied, no-agent, awaiting-acceptance\n',
    );
  });
});

describe('paged lists', () => {
  it('cluster list, token list and audit print one page with --limit and the command for the next', async () => {
    for (const name of ['page-a', 'page-b', 'page-c'])
      expect((await admin('cluster', 'create', name)).code).toBe(0);
    const all = (JSON.parse((await admin('cluster', 'list', '-o', 'json')).stdout) as Listed).items.map(
      (c) => c.name,
    );
    expect(all).toEqual([...all].sort());
    // Text: each page's rows, and on stderr the command that prints the next page.
    const seen: string[] = [];
    let args = ['cluster', 'list', '--limit', '2'];
    for (let page = 0; page < 10; page++) {
      const r = await admin(...args);
      expect(r.code, r.stderr).toBe(0);
      seen.push(
        ...r.stdout
          .trimEnd()
          .split('\n')
          .slice(1)
          .map((line) => line.split(/ +/)[0]!),
      );
      const next = /^more remain: tunnel-relay (cluster list --limit 2 --continue \S+)$/m.exec(r.stderr);
      if (next === null) break;
      args = next[1]!.split(' ');
    }
    expect(seen).toEqual(all);
    // JSON: `continue` is the token.
    const first = JSON.parse((await admin('cluster', 'list', '-o', 'json', '--limit', '1')).stdout);
    expect(first.items).toHaveLength(1);
    const second = JSON.parse(
      (await admin('cluster', 'list', '-o', 'json', '--limit', '1', '--continue', first.continue)).stdout,
    );
    expect(second.items.map((c: { name: string }) => c.name)).toEqual([all[1]]);
    const keys = JSON.parse((await admin('token', 'list', '-o', 'json', '--limit', '1')).stdout);
    expect(keys.items).toHaveLength(1);
    expect(typeof keys.continue).toBe('string');
    const rest = JSON.parse((await admin('token', 'list', '-o', 'json', '--continue', keys.continue)).stdout);
    const every = JSON.parse((await admin('token', 'list', '-o', 'json')).stdout);
    expect([...keys.items, ...rest.items]).toEqual(every.items);
    const audit = await admin('audit', '--limit', '2');
    expect(audit.stdout.trimEnd().split('\n')).toHaveLength(3);
    expect(audit.stderr).toMatch(/^more remain: tunnel-relay audit --limit 2 --continue \S+$/m);
    const everything = JSON.parse((await admin('audit', '--all', '-o', 'json')).stdout);
    expect(everything.items.length).toBeGreaterThan(3);
    expect(everything.continue).toBeUndefined();
    const bad = await admin('cluster', 'list', '--continue', 'bm9wZQ');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error BAD_INPUT: continue: not a token this list \(clusters\) issued/);
    const watch = await admin('cluster', 'list', '--watch', '--limit', '2');
    expect(watch.stderr).toBe(
      'error BAD_INPUT: --watch follows every cluster: leave out --limit and --continue\n',
    );
  });
});

describe('cluster accept', () => {
  it('says so when no agent is waiting (NO_AGENT_WAITING), in text and JSON', async () => {
    const r = await admin('cluster', 'accept', 'fresh');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "error NO_AGENT_WAITING: cluster fresh has no agent waiting for acceptance: no agent has registered yet; run the join command from 'cluster create' or 'cluster rotate-psk fresh' on the agent's host\n",
    );
    const j = await admin('cluster', 'accept', 'fresh', '-o', 'json');
    expect(JSON.parse(j.stdout).error.code).toBe('NO_AGENT_WAITING');
  });

  it('accepts the agent that is waiting', async () => {
    const r = await admin('cluster', 'accept', 'waiting');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('cluster waiting is Accepted\n');
  });
});
