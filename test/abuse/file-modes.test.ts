/**
 * Attack replay: secrets left readable by other local users. Under umask 022 in a data dir that already
 * existed 0755, relay.db and its -wal/-shm came out 0644 with every per-pair WireGuard preshared key in
 * clear, and a hub.key someone had made 0644 was used without a word. The agent kept its preshared key
 * inside state.json. Through the real `tunnel-relay serve` and `tunnel-client join` / `run`, all spawned
 * under umask 022:
 *   - every file holding a secret is 0600 after start and after traffic (the -wal exists then);
 *   - a secret file of ours with a wider mode is set back to 0600 with an INSECURE_FILE_MODE warning
 *     (the key itself is kept), and one that cannot be fixed (another user's, open to everyone) is
 *     refused at start with `error INSECURE_FILE_MODE`;
 *   - the agent keeps the preshared key in its own 0600 file, and a state dir in the old layout (key in
 *     state.json) is migrated on load and still connects.
 */
import {
  chmodSync,
  chownSync,
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from '../cli-harness.js';
import { isRoot } from '../helpers/privileges.js';
import { abuseRuns } from './scale.js';

const UMASK = 0o022;
const RELAY_SECRETS = ['hub.key', 'tls/key.pem', 'relay.db', 'relay.db-wal', 'relay.db-shm'];
const AGENT_SECRETS = ['private.key', 'credential', 'preshared.key', 'state.json'];

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let stateDir: string;
let adminEnv: NodeJS.ProcessEnv;

const modeOf = (path: string) => statSync(path).mode & 0o777;
const octal = (mode: number) => mode.toString(8);

/** A directory that already exists with mode 0755 (what `mkdir` gives under umask 022). */
function dir0755(prefix: string): string {
  const d = join(tempDir(prefix), 'd');
  mkdirSync(d);
  chmodSync(d, 0o755);
  return d;
}

async function startRelay(): Promise<void> {
  const started = await startServe(dataDir, '127.0.0.1:0', [], { umask: UMASK });
  relay = started.proc;
  ready = started.ready;
}

beforeAll(async () => {
  buildIfStale();
  dataDir = dir0755('abuse-modes-relay-');
  stateDir = dir0755('abuse-modes-agent-');
  await startRelay();
  adminEnv = adminEnvOf(ready);
}, 120_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv(), 40_000, { umask: UMASK });

function expectModes(dir: string, files: readonly string[], mode: number): void {
  for (const f of files) expect(octal(modeOf(join(dir, f))), f).toBe(octal(mode));
}

describe('secret files under umask 022 in 0755 directories, real binaries', () => {
  it('relay and agent create every secret file 0600, before and after traffic; state.json holds no key', async () => {
    expectModes(dataDir, RELAY_SECRETS, 0o600);
    const created = JSON.parse((await admin('cluster', 'create', 'modes', '--output', 'json')).stdout) as {
      bootstrap: { joinCommand: string };
    };
    const joinArgs = joinCommandWords(created.bootstrap.joinCommand);
    const joined = await client(...joinArgs, '--state-dir', stateDir, '--wait', '--output', 'json');
    expect(joined.code, joined.stderr).toBe(0);
    expect(JSON.parse(joined.stdout).status).toBe('Accepted');
    // After registration and a WireGuard session through the relay.
    expectModes(dataDir, RELAY_SECRETS, 0o600);
    expectModes(stateDir, AGENT_SECRETS, 0o600);
    for (const f of readdirSync(stateDir)) expect(octal(modeOf(join(stateDir, f))), f).toBe('600');
    const psk = readFileSync(join(stateDir, 'preshared.key'), 'utf8').trim();
    expect(psk).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const state = readFileSync(join(stateDir, 'state.json'), 'utf8');
    expect(state).not.toContain(psk);
    expect(JSON.parse(state).tunnel).not.toHaveProperty('presharedKey');
    expect(JSON.parse(state).tunnel.hubPublicKey).toMatch(/=$/);
  });

  it('an agent state dir in the old layout, with modes widened: run migrates the key, fixes the modes, connects', async () => {
    const psk = readFileSync(join(stateDir, 'preshared.key'), 'utf8').trim();
    const state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8'));
    // The layout of earlier builds: the preshared key inside state.json, no preshared.key.
    writeFileSync(
      join(stateDir, 'state.json'),
      JSON.stringify({ ...state, tunnel: { ...state.tunnel, presharedKey: psk } }),
    );
    rmSync(join(stateDir, 'preshared.key'));
    for (const f of ['private.key', 'credential', 'state.json']) chmodSync(join(stateDir, f), 0o644);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv(), { umask: UMASK });
    try {
      await agent.waitFor(
        (p) => p.stderr.includes('WireGuard session to the hub is up'),
        20_000,
        'the session',
      );
    } finally {
      await agent.stop();
    }
    for (const f of ['private.key', 'credential', 'state.json']) {
      expect(agent.stderr).toMatch(
        new RegExp(`warning INSECURE_FILE_MODE: .*${join(stateDir, f)} had mode 644`),
      );
    }
    expectModes(stateDir, AGENT_SECRETS, 0o600);
    expect(readFileSync(join(stateDir, 'preshared.key'), 'utf8').trim()).toBe(psk);
    const migrated = readFileSync(join(stateDir, 'state.json'), 'utf8');
    expect(migrated).not.toContain(psk);
    expect(JSON.parse(migrated).tunnel).not.toHaveProperty('presharedKey');
  });

  it('relay files of ours with a wider mode are set back to 0600 with a warning; the keys are kept', async () => {
    const wider = fc.sample(
      fc.integer({ min: 1, max: 0o077 }).map((extra) => 0o600 | extra),
      abuseRuns(1),
    );
    for (const mode of wider) {
      const hubKey = readFileSync(join(dataDir, 'hub.key'), 'utf8');
      const caPin = ready.caPin;
      await relay.stop();
      for (const f of ['hub.key', 'tls/key.pem', 'relay.db']) chmodSync(join(dataDir, f), mode);
      await startRelay();
      const warned = relay.stderr
        .split('\n')
        .filter((l) => l.includes('"code":"INSECURE_FILE_MODE"'))
        .map((l) => JSON.parse(l) as { file: string; oldMode: string; level: number });
      for (const f of ['hub.key', 'tls/key.pem', 'relay.db']) {
        expect(warned, `${f} at ${octal(mode)}`).toContainEqual(
          expect.objectContaining({ file: join(dataDir, f), oldMode: octal(mode), level: 40 }),
        );
      }
      expectModes(dataDir, RELAY_SECRETS, 0o600);
      expect(readFileSync(join(dataDir, 'hub.key'), 'utf8')).toBe(hubKey);
      expect(ready.caPin).toBe(caPin);
    }
  });

  it("another user's hub.key: open to its group only is accepted, open to everyone is refused", async () => {
    expect(isRoot(), 'this test chowns a file to another user: run it as root').toBe(true);
    const copy = join(tempDir('abuse-modes-copy-'), 'data');
    cpSync(dataDir, copy, { recursive: true });
    const hubKey = join(copy, 'hub.key');
    chownSync(hubKey, 65534, 65534);
    chmodSync(hubKey, 0o640);
    const shared = await startServe(copy, '127.0.0.1:0', [], { umask: UMASK });
    expect(await shared.proc.stop()).toBe(0);
    expect(shared.proc.stderr).not.toContain('INSECURE_FILE_MODE');
    expect(modeOf(hubKey)).toBe(0o640);
    chmodSync(hubKey, 0o644);
    const r = await run(
      RELAY_BIN,
      ['serve', '--listen', '127.0.0.1:0', '--data-dir', copy, '--udp-port', 'off', '--stun-port', 'off'],
      cleanEnv(),
      15_000,
      { umask: UMASK },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error INSECURE_FILE_MODE: hub private key ${hubKey} has mode 644 and belongs to uid 65534: it is open to every local user`,
    );
    expect(modeOf(hubKey)).toBe(0o644);
  });
});
