/**
 * A cluster deleted or denied on the hub ends the agent's retry loop through the real binaries:
 * `run`, `join` and `join --wait` exit 1 with an error that says what happened and what to run, and
 * `tunnel-client status` says it afterwards.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLIENT_BIN, cleanEnv, Proc, run, tempDir } from './cli-harness.js';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'cli-stops-relay', args: ['--lease-duration', '10'] });

const admin = (...args: string[]) => relay.admin(...args);

async function joinArgs(name: string, token?: string): Promise<string[]> {
  let psk = token;
  if (psk === undefined) {
    const r = await admin('cluster', 'create', name, '--output', 'json');
    expect(r.code, r.stderr).toBe(0);
    psk = (JSON.parse(r.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
  }
  return ['join', '--relay', relay.ready.url, '--cluster', name, '--psk', psk, '--ca-pin', relay.ready.caPin];
}

function leased(stateDir: string): boolean {
  try {
    const s = JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as { leaseRenewedAt: unknown };
    return s.leaseRenewedAt !== null;
  } catch {
    return false;
  }
}

/** The agent's exit code, or 'still running' after `ms`. */
async function exitWithin(p: Proc, ms: number): Promise<number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still running'>((r) => {
    timer = setTimeout(() => r('still running'), ms);
  });
  try {
    return await Promise.race([p.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function status(stateDir: string): Promise<string> {
  const r = await run(CLIENT_BIN, ['status', '--state-dir', stateDir], cleanEnv());
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe('the agent stops when the hub ends its registration', () => {
  it('run: a deleted cluster exits 1 naming unjoin and a new join command; status says so', async () => {
    const stateDir = join(tempDir('cli-stops-del-'), 's');
    const joined = await run(
      CLIENT_BIN,
      [...(await joinArgs('edge-del')), '--state-dir', stateDir, '--wait'],
      cleanEnv(),
    );
    expect(joined.code, joined.stderr).toBe(0);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    try {
      await agent.waitFor(() => leased(stateDir), 15_000, 'a lease');
      expect((await admin('cluster', 'delete', 'edge-del')).code).toBe(0);
      expect(await exitWithin(agent, 20_000)).toBe(1);
      expect(agent.stderr).toMatch(/error UNAUTHENTICATED: .*cluster edge-del was deleted on the hub/);
      expect(agent.stderr).toContain(`Run 'tunnel-client unjoin --state-dir ${stateDir}'`);
      expect(await status(stateDir)).toMatch(
        /stopped: +UNAUTHENTICATED: .*was deleted.*tunnel-client unjoin/,
      );
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it('join (no --wait): a denied cluster exits 1 naming cluster accept; status says Denied and why', async () => {
    const stateDir = join(tempDir('cli-stops-deny-'), 's');
    const agent = new Proc(
      CLIENT_BIN,
      [...(await joinArgs('edge-deny')), '--state-dir', stateDir],
      cleanEnv(),
    );
    try {
      await agent.waitFor(() => leased(stateDir), 15_000, 'a lease');
      expect((await admin('cluster', 'deny', 'edge-deny')).code).toBe(0);
      expect(await exitWithin(agent, 20_000)).toBe(1);
      expect(agent.stderr).toMatch(
        /error CLUSTER_DENIED: cluster edge-deny was denied .*'tunnel-relay cluster accept edge-deny'/,
      );
      const text = await status(stateDir);
      expect(text).toMatch(/status: +Denied/);
      expect(text).toMatch(/stopped: +CLUSTER_DENIED: .*tunnel-client unjoin/);
    } finally {
      await agent.stop();
    }
  }, 60_000);

  it('join --wait: a Pending cluster deleted while waiting ends the wait (exit 1)', async () => {
    const token = await admin('token', 'create', '--role', 'bootstrap', '--output', 'json');
    expect(token.code, token.stderr).toBe(0);
    const key = (JSON.parse(token.stdout) as { token: string }).token;
    const stateDir = join(tempDir('cli-stops-pending-'), 's');
    const agent = new Proc(
      CLIENT_BIN,
      [...(await joinArgs('edge-pend', key)), '--state-dir', stateDir, '--wait'],
      cleanEnv(),
    );
    try {
      await agent.waitFor((p) => p.stderr.includes('is Pending'), 15_000, 'the Pending line');
      expect((await admin('cluster', 'delete', 'edge-pend')).code).toBe(0);
      expect(await exitWithin(agent, 15_000)).toBe(1);
      expect(agent.stderr).toMatch(/error UNAUTHENTICATED: .*cluster edge-pend was deleted/);
    } finally {
      await agent.stop();
    }
  }, 60_000);
});
