/**
 * `tunnel-client status` with the relay gone, through the real binaries: the running agent's relay
 * connection error shows at once (from its data plane, not after the next lease), and `--refresh`
 * prints the local status plus the error (exit 1) instead of only the error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';

afterAll(async () => {
  await cleanup();
});

const status = (stateDir: string, ...flags: string[]) =>
  run(CLIENT_BIN, ['status', '--state-dir', stateDir, ...flags], cleanEnv());

function connected(stateDir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as { connected: boolean })
      .connected;
  } catch {
    return false;
  }
}

describe('status while the relay is down', () => {
  it('shows the relay error at once, and --refresh prints the local status plus the error', async () => {
    buildIfStale();
    // The default lease is 60 s: anything status shows within seconds of the relay going away is not from a lease.
    const { proc: relay, ready } = await startServe(tempDir('cli-down-relay-'), '127.0.0.1:0', []);
    const env = adminEnvOf(ready);
    const stateDir = join(tempDir('cli-down-state-'), 's');
    let agent: Proc | undefined;
    try {
      const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-down', '--output', 'json'], env);
      const psk = (JSON.parse(created.stdout) as { bootstrap: { psk: string } }).bootstrap.psk;
      const joinArgs = [
        'join',
        '--relay',
        ready.url,
        '--cluster',
        'edge-down',
        '--psk',
        psk,
        '--ca-pin',
        ready.caPin,
      ];
      const joined = await run(CLIENT_BIN, [...joinArgs, '--state-dir', stateDir, '--wait'], cleanEnv());
      expect(joined.code, joined.stderr).toBe(0);
      agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
      await agent.waitFor(() => connected(stateDir), 20_000, 'the tunnel up');
      expect((await status(stateDir)).stdout).not.toContain('relay error:');

      await relay.stop();
      const stoppedAt = Date.now();
      let text = '';
      while (Date.now() - stoppedAt < 8_000 && !text.includes('relay error:')) {
        text = (await status(stateDir)).stdout;
      }
      expect(text).toMatch(/relay error: +[A-Z_]+: /);
      expect(text).toMatch(/connected: +no/);
      expect(text).not.toContain('last error:'); // no lease has failed yet: this came from the data plane

      const refreshed = await status(stateDir, '--refresh');
      expect(refreshed.code).toBe(1);
      expect(refreshed.stdout).toMatch(/^cluster: +edge-down$/m);
      expect(refreshed.stdout).toMatch(/status: +Accepted/);
      expect(refreshed.stdout).toMatch(/refresh error: +RELAY_UNREACHABLE: .*127\.0\.0\.1/);
      const json = await status(stateDir, '--refresh', '--output', 'json');
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stdout)).toMatchObject({
        cluster: 'edge-down',
        status: 'Accepted',
        refreshError: expect.stringMatching(/^RELAY_UNREACHABLE: /),
        relayError: expect.any(String),
      });
    } finally {
      await agent?.stop();
      await relay.stop();
    }
  }, 90_000);
});
