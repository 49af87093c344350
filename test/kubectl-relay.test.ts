/**
 * kubectl against the real relay and real agents: what kubectl prints when the path proxy refuses
 * (Kubernetes Status answers), and the kubeconfig's scoped access key (`tunnel-relay kubeconfig`:
 * minted per cluster, refused elsewhere, expiring, revocable, merged into a kubeconfig file).
 */
import { execFile } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
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
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { pollUntil } from './helpers/wait.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

let relay: Proc;
let ready: ReadyLine;
let adminEnv: NodeJS.ProcessEnv;
let dir: string;
let upstream: http.Server;
let upstreamPort: number;
/** A port with nothing listening (a server was bound there and closed). */
let deadPort: number;
const agents: Record<string, Proc> = {};

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);

interface Kubectl {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(kubeconfig: string, args: string[]): Promise<Kubectl> {
  return new Promise((resolve) =>
    execFile(
      'kubectl',
      ['--kubeconfig', kubeconfig, '--request-timeout', '15s', ...args],
      { env: cleanEnv({ HOME: dir }), timeout: 25_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr }),
    ),
  );
}

async function waitConnection(name: string, connected: boolean): Promise<void> {
  await pollUntil({
    what: `${name}: connected to become ${connected}`,
    read: async () => JSON.parse((await admin('cluster', 'get', name, '--output', 'json')).stdout).connected,
    until: (now) => now === connected,
    timeoutMs: 25_000,
    intervalMs: 200,
  });
}

async function joinAndRun(name: string, flags: string[]): Promise<void> {
  const created = await admin('cluster', 'create', name, '--output', 'json');
  expect(created.code, created.stderr).toBe(0);
  const joinArgs = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const stateDir = join(tempDir('kubectl-relay-agent-'), 'state');
  const j = await run(
    CLIENT_BIN,
    [...joinArgs, '--state-dir', stateDir, ...flags, '--wait'],
    cleanEnv(),
    40_000,
  );
  expect(j.code, j.stderr).toBe(0);
  agents[name] = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
  await waitConnection(name, true);
}

/** `tunnel-relay kubeconfig NAME` written to a file; resolves with the file and the minted key's id. */
async function kubeconfigFile(name: string, env = adminEnv, extra: string[] = []) {
  const r = await run(RELAY_BIN, ['kubeconfig', name, ...extra], env);
  expect(r.code, r.stderr).toBe(0);
  const file = join(dir, `kc-${name}-${Date.now()}`);
  writeFileSync(file, r.stdout);
  const keyId = /access key (k_[A-Za-z0-9_-]+)/.exec(r.stderr)?.[1];
  expect(keyId, r.stderr).toBeDefined();
  return { file, keyId: keyId!, token: parseYaml(r.stdout).users[0].user.token as string, text: r.stdout };
}

/** `kubectl get --raw` of `path` on `cluster`'s proxy (kubectl takes --raw paths from the server's root). */
const raw = (cluster: string, path: string): string[] => [
  'get',
  '--raw',
  `/api/v1/clusters/${cluster}/proxy${path}`,
];

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('kubectl-relay-');
  upstream = http.createServer(sampleHandler('plain'));
  upstreamPort = await listen(upstream);
  const closed = http.createServer();
  deadPort = await listen(closed);
  closed.close();
  const started = await startServe(join(dir, 'relay'), '127.0.0.1:0');
  relay = started.proc;
  ready = started.ready;
  adminEnv = adminEnvOf(ready);
  await Promise.all([
    joinAndRun('edge-1', ['--upstream', `http://127.0.0.1:${upstreamPort}`]),
    joinAndRun('edge-gone', ['--upstream', `http://127.0.0.1:${upstreamPort}`]),
    joinAndRun('edge-noup', []),
    joinAndRun('edge-dial', ['--upstream', `http://127.0.0.1:${deadPort}`]),
  ]);
  await agents['edge-gone']!.stop('SIGKILL');
  await waitConnection('edge-gone', false);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
  upstream?.close();
});

describe('kubectl prints why the relay refused', () => {
  it('reaches a connected cluster', async () => {
    const { file } = await kubeconfigFile('edge-1');
    const r = await kubectl(file, ['version', '-o', 'json']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout).serverVersion).toMatchObject({ gitVersion: 'v1.30.0+plain' });
  });

  it('agent not connected: names the cluster and when its agent was last seen', async () => {
    const { file } = await kubeconfigFile('edge-gone');
    const r = await kubectl(file, raw('edge-gone', '/api/v1/namespaces'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^Error from server \(ServiceUnavailable\): agent for cluster edge-gone is not connected \(last seen \d+s ago\)$/,
    );
  });

  it('agent not connected: discovery commands (get pods, api-resources) print the relay message', async () => {
    const { file } = await kubeconfigFile('edge-gone');
    for (const args of [['get', 'pods'], ['api-resources']]) {
      const r = await kubectl(file, args);
      expect(r.code).toBe(1);
      // client-go reads discovery answers raw (no Status decoding): the message comes from the text body.
      expect(r.stderr.trim().split('\n').at(-1)).toMatch(
        /^Error from server \(InternalError\): an error on the server \("agent for cluster edge-gone is not connected \(last seen \d+s ago\)"\) has prevented the request from succeeding$/,
      );
    }
  });

  it('an agent without --upstream refuses the stream, and kubectl says so', async () => {
    const { file } = await kubeconfigFile('edge-noup');
    const r = await kubectl(file, raw('edge-noup', '/api/v1/namespaces'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      'Error from server (ServiceUnavailable): agent for cluster edge-noup refused the stream: this agent has no --upstream',
    );
  });

  it('the agent cannot dial its upstream: the address and the dial error', async () => {
    const { file } = await kubeconfigFile('edge-dial');
    const r = await kubectl(file, raw('edge-dial', '/api/v1/namespaces'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      'Error from server (ServiceUnavailable): agent for cluster edge-dial could not reach its upstream: ' +
        `dial failed: 127.0.0.1:${deadPort}: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:${deadPort})`,
    );
  });

  it('an unknown cluster is NotFound', async () => {
    const { file } = await kubeconfigFile('edge-1');
    const r = await kubectl(file, raw('no-such-edge', '/version'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("Error from server (NotFound): cluster 'no-such-edge' not found");
  });

  it('no permission: a viewer kubeconfig (read-only key) may not write', async () => {
    const viewer = await admin('token', 'create', '--role', 'viewer', '--output', 'json');
    expect(viewer.code, viewer.stderr).toBe(0);
    const env = { ...adminEnv, TUNNEL_ACCESS_KEY: JSON.parse(viewer.stdout).token };
    const { file } = await kubeconfigFile('edge-1', env);
    const body = join(dir, 'body.json');
    writeFileSync(body, '{"kind":"Thing"}');
    const read = await kubectl(file, raw('edge-1', '/version'));
    expect(read.stderr).toBe('');
    const r = await kubectl(file, ['create', '--raw', '/api/v1/clusters/edge-1/proxy/echo', '-f', body]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      // Impersonation is on: the write goes to the agent, which cannot act as the viewer (no token) and refuses it.
      'Error from server (Forbidden): role cluster-proxy-read:edge-1 may not write through the proxy of clusters ' +
        'in group default (the agent of cluster edge-1: no service-account token to act as the caller with ' +
        '(impersonation), and the caller may only read)',
    );
  });
});

describe('the kubeconfig key', () => {
  it('is scoped: it reaches its cluster through kubectl, not another cluster and not the admin API', async () => {
    const { file, token } = await kubeconfigFile('edge-1');
    const ok = await kubectl(file, raw('edge-1', '/hello'));
    expect(ok.stdout).toBe('hello from plain');
    const other = await kubectl(file, raw('edge-noup', '/version'));
    expect(other.stderr.trim()).toBe("Error from server (NotFound): cluster 'edge-noup' not found");
    const api = await run(RELAY_BIN, ['cluster', 'list'], { ...adminEnv, TUNNEL_ACCESS_KEY: token });
    expect(api.code).not.toBe(0);
    expect(api.stderr).toContain('FORBIDDEN');
    const mint = await run(RELAY_BIN, ['kubeconfig', 'edge-1'], { ...adminEnv, TUNNEL_ACCESS_KEY: token });
    expect(mint.code).not.toBe(0);
    expect(mint.stderr).toContain('NOT_FOUND');
  });

  it('shows in token list, and revoking it ends access', async () => {
    const { file, keyId } = await kubeconfigFile('edge-1');
    const list = await admin('token', 'list', '--output', 'json');
    const row = JSON.parse(list.stdout).items.find((k: { id: string }) => k.id === keyId);
    expect(row).toMatchObject({ role: 'cluster-proxy:edge-1', revokedAt: null });
    expect((await kubectl(file, raw('edge-1', '/hello'))).stdout).toBe('hello from plain');
    const revoked = await admin('token', 'revoke', keyId);
    expect(revoked.code, revoked.stderr).toBe(0);
    const r = await kubectl(file, raw('edge-1', '/hello'));
    expect(r.stderr.trim()).toBe(
      'error: You must be logged in to the server (missing, unknown, expired or revoked credential)',
    );
  });

  it('expires after --ttl', async () => {
    const { file, keyId } = await kubeconfigFile('edge-1', adminEnv, ['--ttl', '3s']);
    expect((await kubectl(file, raw('edge-1', '/hello'))).stdout).toBe('hello from plain');
    const list = await admin('token', 'list', '--output', 'json');
    const row = JSON.parse(list.stdout).items.find((k: { id: string }) => k.id === keyId);
    expect(Date.parse(row.expiresAt) - Date.parse(row.createdAt)).toBe(3_000);
    await sleep(Date.parse(row.expiresAt) - Date.now() + 300);
    const r = await kubectl(file, raw('edge-1', '/hello'));
    expect(r.stderr.trim()).toBe(
      'error: You must be logged in to the server (missing, unknown, expired or revoked credential)',
    );
  }, 30_000);

  it('--merge writes ~/.kube/config 0600, and keeps the contexts and entries already in a file', async () => {
    const home = tempDir('kubectl-relay-home-');
    const env: NodeJS.ProcessEnv = { ...adminEnv, HOME: home };
    delete env.KUBECONFIG;
    const fresh = await run(RELAY_BIN, ['kubeconfig', 'edge-1', '--merge'], env);
    expect(fresh.code, fresh.stderr).toBe(0);
    const created = join(home, '.kube', 'config');
    expect(statSync(created).mode & 0o777).toBe(0o600);
    expect(parseYaml(readFileSync(created, 'utf8'))['current-context']).toBe('edge-1-via-relay');
    const ok = await kubectl(created, raw('edge-1', '/hello'));
    expect(ok.stdout).toBe('hello from plain');

    const existing = join(dir, 'existing-config');
    const before = [
      '# my clusters',
      'apiVersion: v1',
      'kind: Config',
      'preferences: { colors: true }',
      'clusters:',
      '  - name: prod',
      '    cluster: { server: "https://prod.example:6443" }',
      'users:',
      '  - name: prod',
      '    user: { token: prod-token }',
      'contexts:',
      '  - name: prod',
      '    context: { cluster: prod, user: prod }',
      'current-context: prod',
      '',
    ].join('\n');
    writeFileSync(existing, before, { mode: 0o640 });
    const merged = await run(RELAY_BIN, ['kubeconfig', 'edge-1', '--merge', '--output', 'json'], {
      ...env,
      KUBECONFIG: `${existing}:${join(dir, 'second')}`,
    });
    expect(merged.code, merged.stderr).toBe(0);
    expect(JSON.parse(merged.stdout)).toMatchObject({ file: existing, context: 'edge-1-via-relay' });
    const text = readFileSync(existing, 'utf8');
    expect(text.startsWith('# my clusters\n')).toBe(true);
    expect(statSync(existing).mode & 0o777).toBe(0o640);
    const doc = parseYaml(text);
    expect(doc['current-context']).toBe('prod');
    expect(doc.preferences).toEqual({ colors: true });
    expect(doc.contexts.map((c: { name: string }) => c.name)).toEqual(['prod', 'edge-1-via-relay']);
    expect(doc.users[0]).toEqual({ name: 'prod', user: { token: 'prod-token' } });
    const via = await kubectl(existing, ['--context', 'edge-1-via-relay', ...raw('edge-1', '/hello')]);
    expect(via.stdout).toBe('hello from plain');

    // A second merge replaces the relay's entries (a new key) instead of adding more.
    const again = await run(RELAY_BIN, ['kubeconfig', 'edge-1', '--merge', '--kubeconfig', existing], env);
    expect(again.code, again.stderr).toBe(0);
    const doc2 = parseYaml(readFileSync(existing, 'utf8'));
    expect(doc2.users.map((u: { name: string }) => u.name)).toEqual(['prod', 'edge-1-via-relay']);
    expect(doc2.users[1].user.token).not.toBe(doc.users[1].user.token);
  });
});
