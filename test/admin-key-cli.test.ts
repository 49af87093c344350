/**
 * The last admin key, through the real binaries: `token revoke` of the last active admin key is refused
 * (another admin key can be revoked); with the relay stopped, `tunnel-relay admin-key create --data-dir`
 * mints a key in the store, the restarted relay accepts it, and the audit log shows who minted it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildIfStale,
  cleanEnv,
  cleanup,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let lastAdmin: Key;

beforeAll(async () => {
  buildIfStale();
  dataDir = tempDir('admin-key-cli-');
  ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

const envWith = (key: string) =>
  cleanEnv({ TUNNEL_RELAY_URL: ready.url, TUNNEL_ACCESS_KEY: key, TUNNEL_RELAY_CA_PIN: ready.caPin });

interface Key {
  id: string;
  role: string;
  token: string;
}

async function keyIds(key: string): Promise<Array<{ id: string; role: string; revokedAt: string | null }>> {
  const r = await run(RELAY_BIN, ['token', 'list', '--output', 'json'], envWith(key));
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).items;
}

describe('the last admin key', () => {
  it('cannot be revoked; another admin key can', async () => {
    const first = ready.adminKey!;
    const [initial] = await keyIds(first);
    const refused = await run(RELAY_BIN, ['token', 'revoke', initial!.id], envWith(first));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `error CONFLICT: access key "${initial!.id}" is the last active admin key; create another first ` +
        '(tunnel-relay token create --role admin), then revoke this one\n',
    );

    const made = await run(
      RELAY_BIN,
      ['token', 'create', '--role', 'admin', '--output', 'json'],
      envWith(first),
    );
    const second = JSON.parse(made.stdout) as Key;
    const revoked = await run(RELAY_BIN, ['token', 'revoke', initial!.id], envWith(second.token));
    expect(revoked.code, revoked.stderr).toBe(0);
    lastAdmin = second;
    const again = await run(RELAY_BIN, ['token', 'revoke', second.id], envWith(second.token));
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error CONFLICT: .* is the last active admin key/);
    expect((await keyIds(second.token)).find((k) => k.id === second.id)?.revokedAt).toBeNull();
  });

  it('admin-key create mints a key offline that the restarted relay accepts, and audits it', async () => {
    // Lose admin access the way the API still allows: the only other admin key expires.
    const made = await run(
      RELAY_BIN,
      ['token', 'create', '--role', 'admin', '--expires-in', '10s', '--output', 'json'],
      envWith(lastAdmin.token),
    );
    const expiring = JSON.parse(made.stdout) as Key & { expiresAt: string };
    expect((await run(RELAY_BIN, ['token', 'revoke', lastAdmin.id], envWith(expiring.token))).code).toBe(0);
    // 10 s leaves room for the revoke on a loaded machine; then wait until the key has expired.
    await sleep(Math.max(0, Date.parse(expiring.expiresAt) - Date.now()) + 100);
    expect((await run(RELAY_BIN, ['token', 'list'], envWith(expiring.token))).code).toBe(1);
    expect(await relay.stop()).toBe(0);
    ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
    expect(ready.adminKey).toBeUndefined();
    await relay.waitFor((p) => p.stderr.includes('no active admin access key'), 5000, 'the warning');
    expect(relay.stderr).toContain(`tunnel-relay admin-key create --data-dir ${dataDir}`);
    expect(await relay.stop()).toBe(0);

    const minted = await run(
      RELAY_BIN,
      ['admin-key', 'create', '--data-dir', dataDir, '--description', 'lost the old one', '--output', 'json'],
      cleanEnv(),
    );
    expect(minted.code, minted.stderr).toBe(0);
    const key = JSON.parse(minted.stdout) as Key;
    expect(key).toMatchObject({ role: 'admin', token: expect.stringMatching(/^trk_/) });

    const text = await run(RELAY_BIN, ['admin-key', 'create', '--data-dir', dataDir], cleanEnv());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^trk_[A-Za-z0-9_-]{43}\n$/);
    expect(text.stderr).toContain('shown only now');

    ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
    expect(ready.adminKey).toBeUndefined();
    const keys = await keyIds(key.token);
    expect(keys.find((k) => k.id === key.id)).toMatchObject({ role: 'admin', revokedAt: null });

    const audit = await run(RELAY_BIN, ['audit', '--output', 'json'], envWith(key.token));
    const entry = JSON.parse(audit.stdout).items.find(
      (a: { action: string; target: string }) => a.action === 'token.create' && a.target === key.id,
    );
    expect(entry).toMatchObject({ actor: 'local', source: 'local' });
    expect(entry.detail).toMatchObject({ role: 'admin', via: 'admin-key create' });
    expect(JSON.stringify(entry)).not.toContain(key.token);

    // While the relay runs, a key minted offline works at once.
    const live = await run(
      RELAY_BIN,
      ['admin-key', 'create', '--data-dir', dataDir, '--output', 'json'],
      cleanEnv(),
    );
    expect(live.code, live.stderr).toBe(0);
    expect((await keyIds(JSON.parse(live.stdout).token)).length).toBeGreaterThan(0);
  });

  it('refuses a data dir that holds no relay store', async () => {
    const empty = tempDir('admin-key-empty-');
    const r = await run(RELAY_BIN, ['admin-key', 'create', '--data-dir', empty], cleanEnv());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error BAD_CONFIG: data-dir: there is no relay store at .*relay\.db/);
    expect(r.stdout).toBe('');
  });
});
