/**
 * End to end through the real binaries: `tunnel-relay serve` on loopback, admin commands, and
 * `tunnel-client` join / status / run / unjoin against it.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  okJson,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  buildIfStale();
  dataDir = tempDir('cli-e2e-relay-');
  const started = await startServe(dataDir, '127.0.0.1:0', ['--lease-duration', '10']);
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const client = (...args: string[]) => run(CLIENT_BIN, args, cleanEnv());

interface Created {
  cluster: { name: string; status: string };
  bootstrap: { psk: string; joinCommand: string; expiresAt: string };
}

/** The join command's flags, as printed by `cluster create` (its PSK, from the environment, as --psk). */
function joinArgs(created: Created): string[] {
  const words = joinCommandWords(created.bootstrap.joinCommand);
  expect(words[0]).toBe('join');
  return words;
}

describe('tunnel-relay serve', () => {
  it('prints the ready line first, with url, CA pin and the admin key on first start', () => {
    expect(ready.event).toBe('ready');
    expect(ready.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(ready.caPin).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(ready.adminKey).toMatch(/^trk_/);
    // Only JSON objects on stdout: logs go to stderr.
    for (const line of relay.stdout.split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  });
});

describe('PSK join', () => {
  let stateDir: string;
  let created: Created;

  it('cluster create prints the join command; its JSON form is the API body', async () => {
    created = okJson<Created>(await admin('cluster', 'create', 'edge-psk', '--output', 'json'));
    expect(created.cluster.name).toBe('edge-psk');
    expect(created.bootstrap.psk).toMatch(/^tpsk_/);
    expect(created.bootstrap.joinCommand).toContain(`--ca-pin ${ready.caPin}`);
    const text = await admin('cluster', 'create', 'edge-text');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /\n {2}TUNNEL_CLIENT_PSK=tpsk_\S+ tunnel-client join --relay \S+ --cluster edge-text --ca-pin sha256:/,
    );
  });

  it('a wrong CA pin is refused with both pins named, and nothing is saved', async () => {
    const dir = join(tempDir('cli-e2e-pin-'), 'state');
    const wrong = `sha256:${'00'.repeat(32)}`;
    const args = joinArgs(created).map((w) => (w === ready.caPin ? wrong : w));
    const r = await client(...args, '--state-dir', dir, '--wait');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('error CA_PIN_MISMATCH:');
    expect(r.stderr).toContain(wrong);
    expect(r.stderr).toContain(ready.caPin);
    expect(r.stderr).not.toContain(created.bootstrap.psk);
    expect(existsSync(join(dir, 'state.json'))).toBe(false);
  });

  it('join --wait with the PSK is Accepted at once and saves 0600 state', async () => {
    stateDir = join(tempDir('cli-e2e-state-'), 'agent');
    const r = await client(
      ...joinArgs(created),
      '--state-dir',
      stateDir,
      '--claim',
      'env=test',
      '--wait',
      '--output',
      'json',
    );
    expect(okJson<{ cluster: string; status: string }>(r)).toMatchObject({
      cluster: 'edge-psk',
      status: 'Accepted',
    });
    expect(r.stderr).not.toContain(created.bootstrap.psk);
    expect(statSync(stateDir).mode & 0o777).toBe(0o700);
    for (const f of ['private.key', 'credential', 'state.json', 'status.json']) {
      expect(statSync(join(stateDir, f)).mode & 0o777, f).toBe(0o600);
    }
    const state = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as Record<string, unknown>;
    expect(state).toMatchObject({
      cluster: 'edge-psk',
      status: 'Accepted',
      caPin: ready.caPin,
      claims: { env: 'test' },
    });
    expect(JSON.stringify(state)).not.toContain('tpsk_');
    expect(JSON.stringify(state)).not.toContain('tac_');
  });

  it('the PSK is single use', async () => {
    const r = await client(
      ...joinArgs(created),
      '--state-dir',
      join(tempDir('cli-e2e-reuse-'), 's'),
      '--wait',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error BOOTSTRAP_REJECTED: /);
  });

  it('status --output json reports the registration', async () => {
    const s = okJson<Record<string, unknown>>(
      await client('status', '--state-dir', stateDir, '--output', 'json'),
    );
    expect(s).toMatchObject({
      cluster: 'edge-psk',
      status: 'Accepted',
      connected: false,
      path: 'none',
      rttMs: null,
    });
    for (const k of ['lastHandshake', 'bytesIn', 'bytesOut', 'values']) expect(s).toHaveProperty(k);
    const refreshed = okJson<Record<string, unknown>>(
      await client('status', '--state-dir', stateDir, '--refresh', '--output', 'json'),
    );
    expect(refreshed.status).toBe('Accepted');
    const relayView = okJson<{ status: string; claims: Record<string, string>; publicKey: string }>(
      await admin('cluster', 'get', 'edge-psk', '--output', 'json'),
    );
    expect(relayView.status).toBe('Accepted');
    expect(relayView.claims).toEqual({ env: 'test' });
  });

  it('run keeps a lease, layers values, and recovers after a relay restart', async () => {
    // Platform and cluster values on the relay, plus a local file on top.
    expect(
      (
        await admin(
          'values',
          'set',
          '--source',
          'platform-config',
          '--set',
          'image.tag=v1',
          '--set',
          'image.repo=r',
        )
      ).code,
    ).toBe(0);
    expect((await admin('values', 'set', 'edge-psk', '--set', 'image.tag=v2')).code).toBe(0);
    const valuesFile = join(tempDir('cli-e2e-values-'), 'local.yaml');
    writeFileSync(valuesFile, 'extra: true\n');
    const statePath = join(stateDir, 'state.json');
    const st = JSON.parse(readFileSync(statePath, 'utf8')) as Record<string, unknown>;
    writeFileSync(statePath, JSON.stringify({ ...st, valuesFiles: [valuesFile] }), { mode: 0o600 });

    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    const readStatus = () =>
      JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as Record<string, unknown>;
    const waitStatus = async (pred: (s: Record<string, unknown>) => boolean, ms: number, what: string) => {
      const polled = pollUntil({ what, read: readStatus, until: pred, timeoutMs: ms, intervalMs: 100 });
      const { value } = await polled.catch((err: Error) => {
        throw new Error(`${err.message}\n${agent.stderr}`);
      });
      return value;
    };
    try {
      const first = await waitStatus(
        (s) =>
          s.pid === agent.child.pid &&
          s.leaseRenewedAt !== null &&
          (s.values as { extra?: boolean }).extra === true &&
          // status.json is also rewritten when the tunnel comes up, possibly before the relay values arrive
          (s.values as { image?: unknown }).image !== undefined,
        15_000,
        'the first lease and values',
      );
      expect(first.values).toEqual({ image: { tag: 'v2', repo: 'r' }, extra: true });
      const status = okJson<Record<string, unknown>>(
        await client('status', '--state-dir', stateDir, '--output', 'json'),
      );
      expect(status).toMatchObject({ agentRunning: true, status: 'Accepted', values: first.values });

      // Stop the relay: graceful, exit 0.
      const port = new URL(ready.url).port;
      expect(await relay.stop('SIGTERM')).toBe(0);
      expect(relay.stdout).toContain('"event":"stopped"');
      await waitStatus((s) => (s.failures as number) >= 1, 20_000, 'a failed lease while the relay is down');

      // Same data dir, same port: same CA pin, no new admin key, and the agent renews again.
      const restarted = await startServe(dataDir, `127.0.0.1:${port}`, ['--lease-duration', '10']);
      relay = restarted.proc;
      expect(restarted.ready.caPin).toBe(ready.caPin);
      expect(restarted.ready.adminKey).toBeUndefined();
      const restartedAt = new Date().toISOString();
      const after = await waitStatus(
        (s) => s.failures === 0 && typeof s.leaseRenewedAt === 'string' && s.leaseRenewedAt > restartedAt,
        40_000,
        'a lease renewed after the restart',
      );
      expect(after.lastError).toBeNull();
      const relayView = okJson<{ leaseRenewTime: string }>(
        await admin('cluster', 'get', 'edge-psk', '--output', 'json'),
      );
      expect(relayView.leaseRenewTime > restartedAt).toBe(true);
    } finally {
      expect(await agent.stop('SIGTERM')).toBe(0);
    }
  }, 90_000);

  it('unjoin deregisters and removes the state', async () => {
    const r = await client('unjoin', '--state-dir', stateDir, '--output', 'json');
    expect(okJson<{ unjoined: string; deregistered: boolean }>(r)).toMatchObject({
      unjoined: 'edge-psk',
      deregistered: true,
    });
    expect(existsSync(stateDir)).toBe(false);
    const view = okJson<{ status: string; publicKey: string | null }>(
      await admin('cluster', 'get', 'edge-psk', '--output', 'json'),
    );
    expect(view.publicKey).toBeNull();
    const again = await client('status', '--state-dir', stateDir);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error STATE_MISSING: /);
  });
});

describe('bootstrap-token join', () => {
  let token: string;

  beforeAll(async () => {
    token = okJson<{ token: string; role: string }>(
      await admin('token', 'create', '--role', 'bootstrap', '--output', 'json'),
    ).token;
    expect(token).toMatch(/^trk_/);
  });

  function waitingJoin(cluster: string): { proc: Proc; stateDir: string } {
    const stateDir = join(tempDir('cli-e2e-boot-'), 'agent');
    const proc = new Proc(
      CLIENT_BIN,
      [
        'join',
        '--relay',
        ready.url,
        '--cluster',
        cluster,
        '--psk',
        token,
        '--ca-pin',
        ready.caPin,
        '--state-dir',
        stateDir,
        '--wait',
        '--output',
        'json',
      ],
      cleanEnv(),
    );
    return { proc, stateDir };
  }

  it('stays Pending until cluster accept, then join --wait exits 0', async () => {
    const { proc, stateDir } = waitingJoin('edge-boot');
    try {
      await proc.waitFor(
        (p) => /edge-boot is Pending: waiting/.test(p.stderr),
        15_000,
        'the Pending progress line',
      );
      const s = okJson<{ status: string }>(
        await client('status', '--state-dir', stateDir, '--output', 'json'),
      );
      expect(s.status).toBe('Pending');
      const listed = okJson<{ items: { name: string; status: string }[] }>(
        await admin('cluster', 'list', '--output', 'json'),
      );
      expect(listed.items.find((c) => c.name === 'edge-boot')?.status).toBe('Pending');
      await sleep(500);
      expect(proc.child.exitCode).toBeNull();
      const accepted = okJson<{ status: string }>(
        await admin('cluster', 'accept', 'edge-boot', '--output', 'json'),
      );
      expect(accepted.status).toBe('Accepted');
      expect(await Promise.race([proc.exited, sleep(15_000).then(() => 'timeout')])).toBe(0);
      expect(JSON.parse(proc.stdout)).toMatchObject({ cluster: 'edge-boot', status: 'Accepted' });
    } finally {
      await proc.stop('SIGKILL');
    }
  }, 40_000);

  it('--wait-timeout gives up with TIMEOUT and keeps the Pending registration', async () => {
    const stateDir = join(tempDir('cli-e2e-wt-'), 'agent');
    const r = await client(
      'join',
      '--relay',
      ready.url,
      '--cluster',
      'edge-slow',
      '--psk',
      token,
      '--ca-pin',
      ready.caPin,
      '--state-dir',
      stateDir,
      '--wait',
      '--wait-timeout',
      '2s',
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error TIMEOUT: cluster edge-slow is still Pending after --wait-timeout 2s/);
    expect(r.stderr).not.toContain(token);
    const s = okJson<{ status: string; agentRunning: boolean }>(
      await client('status', '--state-dir', stateDir, '--output', 'json'),
    );
    expect(s).toMatchObject({ status: 'Pending', agentRunning: false });
  });

  it('cluster deny makes a waiting join fail with CLUSTER_DENIED', async () => {
    const { proc } = waitingJoin('edge-deny');
    try {
      await proc.waitFor((p) => /edge-deny is Pending/.test(p.stderr), 15_000, 'the Pending progress line');
      expect((await admin('cluster', 'deny', 'edge-deny')).stdout).toContain('edge-deny is Denied');
      expect(await Promise.race([proc.exited, sleep(15_000).then(() => 'timeout')])).toBe(1);
      expect(proc.stderr).toMatch(/error CLUSTER_DENIED: /);
      // --output json: the failure is the one JSON document on stdout.
      expect(JSON.parse(proc.stdout)).toMatchObject({ error: { code: 'CLUSTER_DENIED' } });
    } finally {
      await proc.stop('SIGKILL');
    }
  }, 40_000);
});

describe('admin access', () => {
  it('--ca-file verifies the relay with its certificate file instead of a pin', async () => {
    const env = { ...adminEnv };
    delete env.TUNNEL_RELAY_CA_PIN;
    const r = await run(
      RELAY_BIN,
      ['cluster', 'list', '--ca-file', join(dataDir, 'tls', 'cert.pem'), '--output', 'json'],
      env,
    );
    expect(okJson<{ items: unknown[] }>(r).items.length).toBeGreaterThan(0);
    const none = await run(RELAY_BIN, ['cluster', 'list'], env);
    expect(none.code).toBe(1);
    // The relay answered with a certificate nothing vouches for: its own code, naming --ca-pin and --ca-file.
    expect(none.stderr).toMatch(/^error RELAY_CERT_UNTRUSTED: .*--ca-pin/);
  });

  it('audit lists what the admin commands did, newest first', async () => {
    const res = okJson<{ items: { action: string; target: string; actor: string }[] }>(
      await admin('audit', '--limit', '500', '--output', 'json'),
    );
    const actions = res.items.map((a) => `${a.action} ${a.target}`);
    expect(actions).toContain('cluster.create edge-psk');
    expect(actions.indexOf('cluster.create edge-text')).toBeLessThan(
      actions.indexOf('cluster.create edge-psk'),
    );
    const text = await admin('audit', '--limit', '3');
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^AT\s+ACTOR\s+ACTION\s+TARGET\s+SOURCE$/);
    expect(text.stdout.trim().split('\n')).toHaveLength(4);
    const bad = await admin('audit', '--limit', '0');
    expect(bad.code).toBe(2);
  });

  it('a viewer key may list but not create (FORBIDDEN, exit 1); no key at all is bad usage', async () => {
    const viewer = okJson<{ token: string }>(
      await admin('token', 'create', '--role', 'viewer', '--output', 'json'),
    ).token;
    const env = { ...adminEnv, TUNNEL_ACCESS_KEY: viewer };
    expect((await run(RELAY_BIN, ['cluster', 'list'], env)).code).toBe(0);
    const denied = await run(RELAY_BIN, ['cluster', 'create', 'edge-viewer'], env);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^error FORBIDDEN: /);
    expect(denied.stderr).not.toContain(viewer);
    const env2 = { ...adminEnv };
    delete env2.TUNNEL_ACCESS_KEY;
    const missing = await run(RELAY_BIN, ['cluster', 'list'], env2);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error BAD_INPUT: missing --access-key/);
  });

  it('join without --wait keeps running with a lease until SIGTERM, then exits 0', async () => {
    const created = okJson<Created>(await admin('cluster', 'create', 'edge-run', '--output', 'json'));
    const stateDir = join(tempDir('cli-e2e-run-'), 'agent');
    const agent = new Proc(CLIENT_BIN, [...joinArgs(created), '--state-dir', stateDir], cleanEnv());
    try {
      await agent.waitFor(
        () => {
          try {
            const s = JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as {
              leaseRenewedAt: string | null;
            };
            return s.leaseRenewedAt !== null;
          } catch {
            return false;
          }
        },
        15_000,
        'a lease from the joined agent',
      );
      const view = okJson<{ status: string; leaseRenewTime: string | null }>(
        await admin('cluster', 'get', 'edge-run', '--output', 'json'),
      );
      expect(view.status).toBe('Accepted');
      expect(view.leaseRenewTime).not.toBeNull();
      // No TUNNEL_WG_AEAD: the fastest cipher that loads, the OpenSSL addon npm ci built; no TUNNEL_UDP_GSO:
      // the GSO/GRO socket npm ci built too.
      expect(agent.stderr).toContain('WireGuard cipher openssl, UDP via GSO/GRO');
      // One agent per state dir: a second one, and unjoin, are refused while it runs.
      for (const cmd of ['run', 'unjoin']) {
        const second = await client(cmd, '--state-dir', stateDir);
        expect(second.code, cmd).toBe(1);
        expect(second.stderr).toMatch(
          new RegExp(`^error CONFLICT: an agent \\(pid ${agent.child.pid}\\) is already running`),
        );
      }
    } finally {
      expect(await agent.stop('SIGTERM')).toBe(0);
    }
  }, 40_000);
});

describe('tunnel-relay serve in text mode with a config file', () => {
  it('reads the YAML config (flags win), prints the pin and admin key, and stops on SIGINT with exit 0', async () => {
    const dir = tempDir('cli-e2e-conf-');
    const conf = join(dir, 'relay.yaml');
    writeFileSync(
      conf,
      `listen: "not-an-address"\ndata-dir: ${join(dir, 'data')}\nudp-port: off\nstun-port: off\nlease-duration: 30\n`,
    );
    const p = new Proc(RELAY_BIN, ['serve', '--config', conf, '--listen', '127.0.0.1:0'], cleanEnv());
    try {
      await p.waitFor((x) => x.stdout.includes('admin access key'), 20_000, 'the text banner');
      expect(p.stdout).toMatch(
        /^relay listening on https:\/\/127\.0\.0\.1:\d+\nCA pin: sha256:[0-9a-f]{64}\n/,
      );
      expect(p.stdout).toMatch(/admin access key \(shown only now; store it safely\): trk_/);
      expect(existsSync(join(dir, 'data', 'tls', 'cert.pem'))).toBe(true);
    } finally {
      expect(await p.stop('SIGINT')).toBe(0);
    }
    writeFileSync(conf, 'listen: 127.0.0.1:0\nlisten-port: 3\n');
    const bad = await run(RELAY_BIN, ['serve', '--config', conf], cleanEnv());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error BAD_CONFIG: listen-port \(.*relay\.yaml\): unknown key/);
  }, 40_000);
});

describe('unjoin while the relay is unreachable', () => {
  it('keeps the state and says so; --force removes it anyway', async () => {
    const stateDir = join(tempDir('cli-e2e-force-'), 'agent');
    mkdirSync(stateDir, { mode: 0o700 });
    writeFileSync(join(stateDir, 'credential'), 'tac_x\n', { mode: 0o600 });
    writeFileSync(join(stateDir, 'private.key'), `${'A'.repeat(43)}=\n`, { mode: 0o600 });
    const state = {
      version: 1,
      relay: 'https://127.0.0.1:1',
      cluster: 'gone',
      caPin: ready.caPin,
      caFile: null,
      publicKey: 'x',
      agentVersion: '0.1.0',
      upstream: null,
      allow: [],
      claims: {},
      valuesFiles: [],
      status: 'Accepted',
      tunnel: null,
      registeredAt: new Date().toISOString(),
    };
    writeFileSync(join(stateDir, 'state.json'), JSON.stringify(state), { mode: 0o600 });
    const kept = await client('unjoin', '--state-dir', stateDir);
    expect(kept.code).toBe(1);
    expect(kept.stderr).toMatch(/^error RELAY_UNREACHABLE: .*was kept \(retry, or pass --force/);
    expect(existsSync(join(stateDir, 'state.json'))).toBe(true);
    const forced = await client('unjoin', '--state-dir', stateDir, '--force', '--output', 'json');
    expect(okJson<{ deregistered: boolean }>(forced).deregistered).toBe(false);
    expect(existsSync(stateDir)).toBe(false);
  });
});

describe('bad usage exits 2 with one line naming the value', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['bad cluster name (relay)', ['cluster', 'create', 'Bad_Name'], /INVALID_NAME: .*"Bad_Name".*DNS-1123/],
    [
      'bad cluster name (client)',
      ['join', '--relay', 'https://127.0.0.1:1', '--cluster', 'UPPER', '--psk', 'x'],
      /INVALID_NAME: .*"UPPER"/,
    ],
    [
      'bad --claim',
      ['join', '--relay', 'https://127.0.0.1:1', '--cluster', 'a', '--psk', 'x', '--claim', 'novalue'],
      /BAD_INPUT: --claim "novalue" is not KEY=VALUE/,
    ],
    [
      'bad --relay URL',
      ['join', '--relay', 'not a url', '--cluster', 'a', '--psk', 'x'],
      /BAD_INPUT: --relay "not a url" is not a URL/,
    ],
    [
      'http relay URL',
      ['join', '--relay', 'http://r:1', '--cluster', 'a', '--psk', 'x'],
      /BAD_INPUT: --relay "http:\/\/r:1" must use https/,
    ],
    [
      'bad --ca-pin',
      ['join', '--relay', 'https://r:1', '--cluster', 'a', '--psk', 'x', '--ca-pin', 'md5:abc'],
      /BAD_INPUT: CA pin 'md5:abc'/,
    ],
    ['unknown flag', ['status', '--bogus'], /BAD_INPUT: unknown option '--bogus'/],
    [
      'bad --output',
      ['status', '--output', 'xml'],
      /BAD_INPUT: --output "xml" is not valid: expected one of json, text/,
    ],
    ['bad --role', ['token', 'create', '--role', 'root'], /BAD_INPUT: --role "root" is not a role/],
    ['bad --listen', ['serve', '--listen', 'nohost'], /BAD_CONFIG: listen/],
    ['bad --udp-port', ['serve', '--udp-port', 'x', '--listen', '127.0.0.1:0'], /BAD_CONFIG: udp-port/],
    [
      '--wait-timeout without --wait',
      ['join', '--relay', 'https://r:1', '--cluster', 'a', '--psk', 'x', '--wait-timeout', '5m'],
      /BAD_INPUT: --wait-timeout only applies together with --wait/,
    ],
    [
      'bad --wait-timeout',
      ['join', '--relay', 'https://r:1', '--cluster', 'a', '--psk', 'x', '--wait', '--wait-timeout', 'soon'],
      /BAD_INPUT: --wait-timeout: "soon" is not a duration/,
    ],
  ];
  for (const [what, args, pattern] of cases) {
    it(what, async () => {
      const bin = ['cluster', 'token', 'serve'].includes(args[0]!) ? RELAY_BIN : CLIENT_BIN;
      const r = await run(bin, args, adminEnv);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^error [A-Z_]+: /);
      expect(lines[0]).toMatch(pattern);
    });
  }

  it('a bad TUNNEL_WG_AEAD or TUNNEL_UDP_GSO stops serve, join and run at once, naming the value', async () => {
    const starts: Array<[string, string[]]> = [
      [
        RELAY_BIN,
        [
          'serve',
          '--listen',
          '127.0.0.1:0',
          '--data-dir',
          tempDir('aead-relay-'),
          '--udp-port',
          'off',
          '--stun-port',
          'off',
        ],
      ],
      [CLIENT_BIN, ['join', '--relay', 'https://127.0.0.1:1', '--cluster', 'a', '--psk', 'x']],
      [CLIENT_BIN, ['run', '--state-dir', tempDir('aead-agent-')]],
    ];
    const bad: Array<[Record<string, string>, string]> = [
      [
        { TUNNEL_WG_AEAD: 'aes-gcm' },
        "error BAD_CONFIG: TUNNEL_WG_AEAD 'aes-gcm' is not an AEAD implementation; expected one of openssl, sodium-native, node:crypto",
      ],
      [
        { TUNNEL_UDP_GSO: 'fast' },
        "error BAD_CONFIG: TUNNEL_UDP_GSO 'fast' is not a setting; expected on or off",
      ],
    ];
    for (const [setting, expected] of bad) {
      for (const [bin, args] of starts) {
        const r = await run(bin, args, { ...adminEnv, ...setting });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr.trim()).toBe(expected);
      }
    }
    // A valid name is used, and the relay's start log says which cipher and UDP socket run.
    const relay = new Proc(
      RELAY_BIN,
      ['serve', '--output', 'json', '--listen', '127.0.0.1:0', '--data-dir', tempDir('aead-ok-')],
      cleanEnv({ TUNNEL_WG_AEAD: 'sodium-native', TUNNEL_UDP_GSO: 'off' }),
    );
    await relay.waitFor((p) => p.stderr.includes('"relay listening"'), 20_000, 'the relay listening log');
    expect(relay.stderr).toContain('"wireguardCipher":"sodium-native"');
    expect(relay.stderr).toContain('"udpSocket":"node:dgram"');
    expect(await relay.stop('SIGTERM')).toBe(0);
  });

  it('an unreadable TUNNEL_CLIENT_UPSTREAM_CA stops join before it spends the PSK, and stops run', async () => {
    const created = okJson<Created>(await admin('cluster', 'create', 'edge-uca', '--output', 'json'));
    const stateDir = join(tempDir('cli-e2e-uca-'), 'agent');
    const args = [...joinArgs(created), '--state-dir', stateDir, '--wait', '--wait-timeout', '20s'];
    const bad = cleanEnv({ TUNNEL_CLIENT_UPSTREAM_CA: '/nonexistent/ca.pem' });
    const expected =
      "error BAD_CONFIG: TUNNEL_CLIENT_UPSTREAM_CA: cannot read '/nonexistent/ca.pem' (ENOENT)";
    const refused = await run(CLIENT_BIN, args, bad);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr.trim()).toBe(expected);
    // The single-use PSK was not spent: the same join command works once the setting is fixed.
    const joined = await run(CLIENT_BIN, args, cleanEnv());
    expect(joined.code, joined.stderr).toBe(0);
    const again = await run(CLIENT_BIN, ['run', '--state-dir', stateDir], bad);
    expect(again.code, again.stderr).toBe(2);
    expect(again.stderr.trim()).toBe(expected);
  }, 40_000);
});
