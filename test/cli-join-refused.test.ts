/**
 * A refused join through the real binaries: the agent gets one BOOTSTRAP_REJECTED (no oracle) whose
 * message lists the causes and the fix, a malformed PSK never leaves the machine, and the relay's
 * audit log keeps the real reason and the source address, never the PSK.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLIENT_BIN, cleanEnv, run, tempDir } from './cli-harness.js';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'cli-refused-relay' });

const admin = (...args: string[]) => relay.admin(...args);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv());

interface AuditItem {
  action: string;
  target: string;
  actor: string;
  source: string;
  detail: Record<string, unknown>;
}

async function refusals(cluster: string): Promise<AuditItem[]> {
  const r = await admin('audit', '--limit', '1000', '--output', 'json');
  expect(r.code, r.stderr).toBe(0);
  const items = (JSON.parse(r.stdout) as { items: AuditItem[] }).items;
  return items.filter((a) => a.action === 'cluster.register.refused' && a.target === cluster);
}

async function create(name: string): Promise<string> {
  const r = await admin('cluster', 'create', name, '--output', 'json');
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
}

function joinWith(cluster: string, psk: string) {
  const args = [
    'join',
    '--relay',
    relay.ready.url,
    '--cluster',
    cluster,
    '--psk',
    psk,
    '--ca-pin',
    relay.ready.caPin,
  ];
  return client(...args, '--state-dir', join(tempDir('cli-refused-state-'), 's'), '--wait');
}

const randomPsk = () => `tpsk_${randomBytes(32).toString('base64url')}`;

describe('refused join', () => {
  it('a malformed PSK is BAD_INPUT (exit 2) before any request, and not quoted', async () => {
    await create('edge-typo');
    const truncated = randomPsk().slice(0, 30);
    const r = await joinWith('edge-typo', truncated);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error BAD_INPUT: --psk is not a bootstrap PSK: .*has 25/);
    expect(r.stderr).not.toContain(truncated);
    const quoted = await joinWith('edge-typo', `tpsk_${'é'.repeat(43)}`);
    expect(quoted.code).toBe(2);
    expect(quoted.stderr).toMatch(/base64url/);
    expect(await refusals('edge-typo')).toEqual([]);
  });

  it('a wrong PSK: the message lists the causes and the fix; the audit says wrong, from where', async () => {
    await create('edge-wrong');
    const wrong = randomPsk();
    const r = await joinWith('edge-wrong', wrong);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error BOOTSTRAP_REJECTED: /);
    // The fix names the cluster the join asked for, ready to paste.
    expect(r.stderr).toContain('`tunnel-relay cluster rotate-psk edge-wrong`');
    for (const cause of [
      'wrong',
      'already used',
      'expired',
      'rotated',
      'deleted',
      'cluster rotate-psk edge-wrong',
    ]) {
      expect(r.stderr).toContain(cause);
    }
    const [entry, ...rest] = await refusals('edge-wrong');
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ source: '127.0.0.1', detail: { reason: 'wrong' } });
    expect(JSON.stringify(entry)).not.toContain(wrong.slice(5, 20));
  });

  it('a used and a rotated PSK get the same answer; the audit tells them apart', async () => {
    const psk = await create('edge-used');
    expect((await joinWith('edge-used', psk)).code).toBe(0);
    const again = await joinWith('edge-used', psk);
    const old = await create('edge-rotated');
    expect((await admin('cluster', 'rotate-psk', 'edge-rotated')).code).toBe(0);
    const rotated = await joinWith('edge-rotated', old);
    expect([again.code, rotated.code]).toEqual([1, 1]);
    // The same answer but for the cluster named in its fix command.
    expect(again.stderr.replaceAll('edge-used', 'NAME')).toBe(
      rotated.stderr.replaceAll('edge-rotated', 'NAME'),
    );
    expect((await refusals('edge-used')).map((a) => [a.detail.reason, a.actor])).toEqual([
      ['used', 'psk:edge-used'],
    ]);
    expect((await refusals('edge-rotated')).map((a) => a.detail.reason)).toEqual(['revoked']);
  });

  it('cluster get shows the PSK state (unused until, used at), never the PSK', async () => {
    const created = await admin('cluster', 'create', 'edge-state', '--output', 'json');
    const { psk, expiresAt } = (
      JSON.parse(created.stdout) as { bootstrap: { psk: string; expiresAt: string } }
    ).bootstrap;
    const before = await admin('cluster', 'get', 'edge-state');
    expect(before.stdout).toContain(`bootstrap PSK: unused, expires ${expiresAt}`);
    expect((await joinWith('edge-state', psk)).code).toBe(0);
    const after = await admin('cluster', 'get', 'edge-state', '--output', 'json');
    const view = JSON.parse(after.stdout) as { bootstrapPsk: { state: string; usedAt: string | null } };
    expect(view.bootstrapPsk).toMatchObject({ state: 'used', expiresAt, usedAt: expect.any(String) });
    const text = await admin('cluster', 'get', 'edge-state');
    expect(text.stdout).toMatch(
      /bootstrap PSK: used \S+; a new join needs `tunnel-relay cluster rotate-psk \S+`/,
    );
    expect(text.stdout + after.stdout).not.toContain(psk.slice(5));
  });

  it('the refusal that reaches the source limit is audited with a rate-limited row; 429s are not', async () => {
    const statuses: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await joinWith('edge-wrong', randomPsk());
      statuses.push(/^error (\w+):/.exec(r.stderr)?.[1] ?? r.stderr);
      if (statuses.at(-1) === 'RATE_LIMITED') break;
    }
    expect(statuses.at(-1)).toBe('RATE_LIMITED');
    for (let i = 0; i < 3; i++) expect((await joinWith('edge-wrong', randomPsk())).code).toBe(1);
    const rows = await refusals('edge-wrong');
    // Newest first: the one rate-limited row, then the refusal that reached the limit; the 429s add none.
    expect(rows[0]?.detail).toMatchObject({ reason: 'rate-limited', retryAfterSeconds: expect.any(Number) });
    expect(rows.slice(1).map((a) => a.detail.reason)).toEqual(rows.slice(1).map(() => 'wrong'));
    expect(rows.filter((a) => a.detail.reason === 'rate-limited')).toHaveLength(1);
  });
});
