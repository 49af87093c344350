/**
 * kubectl through the relay to a cluster's API server, as the relay user who asked: the real relay, the real
 * agent run as if in a pod (KUBERNETES_SERVICE_HOST/PORT and a service-account dir with ca.crt and token,
 * `--upstream https://kubernetes.default.svc:443` as the generated manifests pass it), real kubectl, and a test
 * API server (test/helpers/kube-api/) whose impersonation rights, own rights and RBAC bindings are read from the manifests
 * `tunnel-relay manifests agent` prints. Asserts the exact credential and impersonation headers the API server saw.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
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
import type { AuthzConfig } from './helpers/kube-api/authz.js';
import { type KubeApiServer, type SeenRequest, startKubeApiServer } from './helpers/kube-api/server.js';
import { type ProcessHandle, spawnProcess } from './helpers/process.js';
import { makeCaSignedCert } from './helpers/test-cert.js';
import { pollUntil } from './helpers/wait.js';

const CLUSTER = 'pod-1';
let relay: Proc;
let adminEnv: NodeJS.ProcessEnv;
let dir: string;
let saDir: string;
let stateDir: string;
let api: KubeApiServer;
let agent: Proc;
let podEnv: NodeJS.ProcessEnv;
let podPort: http.Server;

interface Kubectl {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(
  kubeconfig: string,
  args: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<Kubectl> {
  return kubectlRaw(['--kubeconfig', kubeconfig, '--request-timeout', '15s', ...args], input, env);
}

function kubectlRaw(args: string[], input?: string, env: Record<string, string> = {}): Promise<Kubectl> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', args, {
      env: cleanEnv({ HOME: dir, ...env }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

/** The agent's rights and the groups' bindings, read from the manifests `tunnel-relay manifests agent` prints. */
async function authzFromManifests(): Promise<{ authz: AuthzConfig; upstream: string }> {
  const args = ['manifests', 'agent', '--cluster', CLUSTER, '--relay', 'https://relay.example'];
  const r = await run(RELAY_BIN, args, cleanEnv());
  expect(r.code, r.stderr).toBe(0);
  const docs: unknown[] = parseAllDocuments(r.stdout).map((d) => d.toJS());
  const groups = docs.filter(ClusterRole.is).flatMap((role) => role.rules ?? []);
  const impersonable = groups.find((rule) => rule.resources?.includes('groups'))?.resourceNames ?? [];
  // What the agent's ClusterRole lets it do as itself ("list nodes"), besides impersonating.
  const own = groups
    .filter((rule) => !rule.verbs.includes('impersonate'))
    .flatMap((rule) => rule.verbs.flatMap((verb) => (rule.resources ?? []).map((r) => `${verb} ${r}`)));
  const bindings = new Map<string, string>();
  for (const b of docs.filter(ClusterRoleBinding.is)) {
    const subject = b.subjects?.[0];
    if (subject?.kind === 'Group') bindings.set(subject.name, b.roleRef.name);
  }
  const sa = docs.find(ServiceAccount.is)?.metadata;
  const script = docs.find(StatefulSet.is)?.spec?.template.spec?.containers[0]?.args?.[2] ?? '';
  const upstream = /--upstream '([^']+)'/.exec(script)?.[1];
  expect(upstream, script).toBeDefined();
  return {
    upstream: upstream!,
    authz: {
      tokens: new Set(['sa-token-1']),
      serviceAccount: `system:serviceaccount:${sa?.namespace}:${sa?.name}`,
      impersonableGroups: new Set(impersonable),
      bindings,
      serviceAccountRights: new Set(own),
    },
  };
}

async function waitConnected(connected: boolean): Promise<void> {
  await pollUntil({
    what: `${CLUSTER} connected=${connected}`,
    read: async () =>
      JSON.parse((await run(RELAY_BIN, ['cluster', 'get', CLUSTER, '--output', 'json'], adminEnv)).stdout)
        .connected,
    until: (c) => c === connected,
    timeoutMs: 25_000,
    intervalMs: 200,
  });
}

function startAgent(): void {
  agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], podEnv);
}

/** `tunnel-relay kubeconfig` as `env`'s key, written to a file, with the minted key's id. */
async function kubeconfigFile(env = adminEnv): Promise<{ file: string; keyId: string }> {
  const r = await run(RELAY_BIN, ['kubeconfig', CLUSTER], env);
  expect(r.code, r.stderr).toBe(0);
  const file = join(dir, `kc-${Date.now()}-${Math.random().toString(16).slice(2)}`);
  writeFileSync(file, r.stdout);
  const keyId = /access key (k_[A-Za-z0-9_-]+)/.exec(r.stderr)?.[1];
  expect(keyId, r.stderr).toBeDefined();
  return { file, keyId: keyId! };
}

/** The credential and impersonation headers of a request, lower-cased names, in order. */
function identityHeaders(row: SeenRequest): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < row.rawHeaders.length; i += 2) {
    const name = row.rawHeaders[i]!.toLowerCase();
    if (name === 'authorization' || name.startsWith('impersonate-'))
      out.push(`${name}: ${row.rawHeaders[i + 1]}`);
  }
  return out;
}

function lastSeen(pred: (r: SeenRequest) => boolean): SeenRequest {
  const row = api.seen.findLast(pred);
  if (!row)
    throw new Error(`no such request among ${api.seen.map((r) => `${r.method} ${r.url}`).join(', ')}`);
  return row;
}

function watchPods(kubeconfig: string): ProcessHandle {
  return spawnProcess('kubectl', ['--kubeconfig', kubeconfig, 'get', 'pods', '-w', '-o', 'name'], {
    env: { HOME: dir },
    timeoutMs: 90_000,
  });
}

async function waitOutput(p: ProcessHandle, text: string, what: string): Promise<void> {
  await pollUntil({
    what: `${what} (${text})`,
    read: () => p.output(),
    until: (out) => out.includes(text),
    timeoutMs: 20_000,
    intervalMs: 100,
    abort: () => (p.isRunning() ? undefined : `kubectl exited: ${p.output()}`),
  });
}

async function viewerEnv(): Promise<NodeJS.ProcessEnv> {
  const v = await run(RELAY_BIN, ['token', 'create', '--role', 'viewer', '--output', 'json'], adminEnv);
  expect(v.code, v.stderr).toBe(0);
  return { ...adminEnv, TUNNEL_ACCESS_KEY: JSON.parse(v.stdout).token };
}

beforeAll(async () => {
  buildIfStale();
  dir = tempDir('kubectl-impersonation-');
  const { authz, upstream } = await authzFromManifests();
  const cert = makeCaSignedCert('DNS:kubernetes.default.svc,DNS:localhost,IP:127.0.0.1');
  api = await startKubeApiServer({ cert: cert.cert, key: cert.key, authz });
  api.pods.add('web-1');
  podPort = http.createServer((req, res) => res.end(`pod port 8080 answered ${req.method} ${req.url}`));
  podPort.listen(0, '127.0.0.1');
  await once(podPort, 'listening');
  api.podPorts.set(8080, (podPort.address() as AddressInfo).port);
  saDir = join(dir, 'serviceaccount');
  mkdirSync(saDir);
  writeFileSync(join(saDir, 'ca.crt'), cert.caCert);
  writeFileSync(join(saDir, 'token'), 'sa-token-1\n');
  podEnv = cleanEnv({
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: String(api.port),
    TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR: saDir,
  });
  const started = await startServe(join(dir, 'relay'), '127.0.0.1:0');
  relay = started.proc;
  adminEnv = adminEnvOf(started.ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', CLUSTER, '--output', 'json'], adminEnv);
  expect(created.code, created.stderr).toBe(0);
  stateDir = join(dir, 'state');
  const words = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  const j = await run(
    CLIENT_BIN,
    [...words, '--state-dir', stateDir, '--upstream', upstream, '--wait'],
    podEnv,
    40_000,
  );
  expect(j.code, j.stderr).toBe(0);
  startAgent();
  await waitConnected(true);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
  await api?.close();
  podPort?.close();
});

describe('kubectl through the relay acts as the relay user', () => {
  it('get: the API server sees the pod token and the caller, never what kubectl itself sent', async () => {
    const { file, keyId } = await kubeconfigFile();
    const r = await kubectl(file, ['get', 'pods', '--as', 'system:admin', '--as-group', 'system:masters']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('web-1');
    expect(identityHeaders(lastSeen((x) => x.url.startsWith('/api/v1/namespaces/default/pods')))).toEqual([
      'authorization: Bearer sa-token-1',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
    const ns = await kubectl(file, ['get', 'ns', '-o', 'name']);
    expect(ns.stdout).toBe('namespace/default\nnamespace/kube-system\n');
  });

  it("reports the API server's version and node count, read with the rights the manifests give the agent", async () => {
    const view = await pollUntil({
      what: 'the Kubernetes facts at the relay',
      read: async () =>
        JSON.parse((await run(RELAY_BIN, ['cluster', 'get', CLUSTER, '--output', 'json'], adminEnv)).stdout),
      until: (c) => c.nodeCount !== null,
      timeoutMs: 20_000,
      intervalMs: 300,
    });
    expect(view.value).toMatchObject({ kubernetesVersion: 'v1.30.0+test-apiserver', nodeCount: 3 });
    const asked = lastSeen((x) => x.url === '/api/v1/nodes?limit=1');
    expect(asked.status).toBe(200);
    // As itself: the pod's token, no impersonation.
    expect(identityHeaders(asked)).toEqual(['authorization: Bearer sa-token-1']);
  });

  it('picks up a rotated service-account token without a restart', async () => {
    writeFileSync(join(saDir, 'token'), 'sa-token-2\n');
    api.authz.tokens.clear();
    api.authz.tokens.add('sa-token-2');
    const { file } = await kubeconfigFile();
    const r = await kubectl(file, ['get', 'pods', '-o', 'name']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('pod/web-1\n');
    expect(identityHeaders(lastSeen((x) => x.url.startsWith('/api/v1/namespaces/default/pods')))[0]).toBe(
      'authorization: Bearer sa-token-2',
    );
  });

  it('exec with stdin over the v5.channel.k8s.io WebSocket, as the caller', async () => {
    const { file, keyId } = await kubeconfigFile();
    const r = await kubectl(file, ['exec', '-i', 'web-1', '--', 'cat'], 'hello through the relay\n');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hello through the relay\n');
    expect(api.execs.at(-1)).toMatchObject({
      protocol: 'v5.channel.k8s.io',
      stdin: 'hello through the relay\n',
    });
    const upgrade = lastSeen((x) => x.url.includes('/pods/web-1/exec'));
    expect(upgrade.status).toBe(101);
    expect(identityHeaders(upgrade)).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
  });

  it('audits each exec and attach: who, pod, command, start, end, bytes and how it ended', async () => {
    const { file, keyId } = await kubeconfigFile();
    const exec = await kubectl(file, ['exec', '-i', 'web-1', '--', 'cat'], 'audited\n');
    expect(exec.stdout).toBe('audited\n');
    const attach = await kubectl(file, ['attach', '-i', 'web-1', '-c', 'app'], 'attached\n');
    expect(attach.stdout).toContain('attached');
    const viewer = await kubeconfigFile(await viewerEnv());
    const refused = await kubectl(viewer.file, ['exec', 'web-1', '--', 'echo', 'hi']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `User "tunnel-relay:${viewer.keyId}" cannot create resource "pods/exec"`,
    );
    const rows = await pollUntil({
      what: 'the session rows',
      read: async () => {
        const r = await run(RELAY_BIN, ['audit', '--cluster', CLUSTER, '--output', 'json'], adminEnv);
        return JSON.parse(r.stdout).items as Array<{
          actor: string;
          action: string;
          detail: Record<string, unknown>;
        }>;
      },
      until: (items) =>
        ['session.exec', 'session.attach'].every((a) =>
          items.some((i) => i.actor === keyId && i.action === a),
        ) && items.some((i) => i.actor === viewer.keyId),
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    const sessions = rows.value.filter((i) => i.action.startsWith('session.'));
    const row = sessions.find((i) => i.actor === keyId && i.action === 'session.exec');
    expect(row?.detail).toMatchObject({
      role: 'admin',
      namespace: 'default',
      pod: 'web-1',
      command: ['cat'],
      exitReason: expect.stringMatching(/closed/),
    });
    expect(Number(row?.detail.bytesIn)).toBeGreaterThan(0);
    expect(Number(row?.detail.bytesOut)).toBeGreaterThan(0);
    expect(Date.parse(String(row?.detail.endedAt))).toBeGreaterThanOrEqual(
      Date.parse(String(row?.detail.startedAt)),
    );
    const att = sessions.find((i) => i.action === 'session.attach');
    expect(att).toMatchObject({ actor: keyId, detail: { role: 'admin', container: 'app' } });
    const denied = sessions.find((i) => i.actor === viewer.keyId);
    expect(denied).toMatchObject({
      action: 'session.exec',
      detail: { role: 'viewer', command: ['echo', 'hi'], exitReason: 'refused (HTTP 403)' },
    });
    const onlyAttach = await run(
      RELAY_BIN,
      ['audit', '--cluster', CLUSTER, '--kind', 'attach', '--output', 'json'],
      adminEnv,
    );
    expect((JSON.parse(onlyAttach.stdout).items as Array<{ action: string }>).map((i) => i.action)).toEqual([
      'session.attach',
    ]);
    const table = await run(RELAY_BIN, ['audit', '--kind', 'attach'], adminEnv);
    expect(table.stdout).toMatch(/session\.attach\s+pod-1 .*admin default\/web-1:app in \d+B out \d+B, /);
  });

  it('exec with stdin over SPDY/3.1 (kubectl with WebSockets off), as the caller, its own --as dropped', async () => {
    const { file, keyId } = await kubeconfigFile();
    const args = ['exec', '-i', 'web-1', '--as', 'system:admin', '--as-group', 'system:masters', '--', 'cat'];
    const r = await kubectl(file, args, 'spdy stdin\n', { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('spdy stdin\n');
    expect(api.execs.at(-1)).toMatchObject({ protocol: 'SPDY/3.1 v4.channel.k8s.io', stdin: 'spdy stdin\n' });
    const echo = await kubectl(file, ['exec', 'web-1', '--', 'echo', 'hi', 'there'], undefined, {
      KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false',
    });
    expect(echo.stdout).toBe('hi there\n');
    expect(identityHeaders(lastSeen((x) => x.url.includes('/pods/web-1/exec')))).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
  });

  it.each([
    ['a WebSocket tunnel', { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'true' }, 'SPDY/3.1+portforward.k8s.io'],
    ['SPDY/3.1', { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' }, 'SPDY/3.1'],
  ])('kubectl port-forward over %s reaches the pod port, audited', async (_, env, protocol) => {
    const { file, keyId } = await kubeconfigFile();
    const forwards = api.portForwards.length;
    const pf = spawnProcess('kubectl', ['--kubeconfig', file, 'port-forward', 'pod/web-1', ':8080'], {
      env: { HOME: dir, ...env },
      timeoutMs: 60_000,
    });
    try {
      await waitOutput(pf, '-> 8080', 'the forwarding line');
      const port = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(pf.output())?.[1];
      expect(port, pf.output()).toBeDefined();
      for (const n of [1, 2]) {
        const res = await fetch(`http://127.0.0.1:${port}/hello-${n}`, {
          headers: { connection: 'close' },
        });
        expect(await res.text()).toBe(`pod port 8080 answered GET /hello-${n}`);
      }
    } finally {
      await pf.stop();
    }
    expect(api.portForwards.slice(forwards)).toEqual([{ protocol, connections: [8080, 8080] }]);
    const upgrade = lastSeen((x) => x.url.includes('/pods/web-1/portforward'));
    expect(identityHeaders(upgrade)).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
    const rows = await pollUntil({
      what: 'the port-forward row',
      read: async () => {
        const r = await run(RELAY_BIN, ['audit', '--kind', 'port-forward', '--output', 'json'], adminEnv);
        return JSON.parse(r.stdout).items as Array<{ actor: string; detail: Record<string, unknown> }>;
      },
      until: (items) => items.some((i) => i.actor === keyId),
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    const row = rows.value.find((i) => i.actor === keyId)?.detail;
    // kubectl names the ports inside the SPDY streams, not in the URL: the row has none.
    expect(row).toMatchObject({ role: 'admin', namespace: 'default', pod: 'web-1' });
    expect(row).not.toHaveProperty('ports');
    expect(Number(row?.bytesIn)).toBeGreaterThan(0);
    expect(Number(row?.bytesOut)).toBeGreaterThan(0);
  });

  it("a viewer's delete reaches the API server as tunnel-relay:viewer and is refused there", async () => {
    const { file, keyId } = await kubeconfigFile(await viewerEnv());
    const read = await kubectl(file, ['get', 'pods', '-o', 'name']);
    expect(read.stdout).toBe('pod/web-1\n');
    const r = await kubectl(file, ['delete', 'pod', 'web-1']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `Error from server (Forbidden): pods "web-1" is forbidden: User "tunnel-relay:${keyId}" cannot delete ` +
        'resource "pods" in API group "" in the namespace "default"',
    );
    const del = lastSeen((x) => x.method === 'DELETE');
    expect(del.status).toBe(403);
    expect(identityHeaders(del)).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:viewer',
    ]);
    expect(api.pods.get('web-1')).toBeDefined();
  });

  it('impersonate: false in the cluster values: the agent acts as itself', async () => {
    const off = await run(RELAY_BIN, ['values', 'set', CLUSTER, '--set', 'impersonate=false'], adminEnv);
    expect(off.code, off.stderr).toBe(0);
    try {
      const shown = await run(RELAY_BIN, ['cluster', 'get', CLUSTER], adminEnv);
      expect(shown.stdout).toMatch(/impersonation:\s+off/i);
      const { file } = await kubeconfigFile();
      const r = await kubectl(file, ['get', 'pods', '-o', 'name']);
      expect(r.stderr.trim()).toBe(
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:tunnel-system:tunnel-client" ' +
          'cannot list resource "pods" in API group "" in the namespace "default"',
      );
      expect(identityHeaders(lastSeen((x) => x.url.startsWith('/api/v1/namespaces/default/pods')))).toEqual([
        'authorization: Bearer sa-token-2',
      ]);
    } finally {
      await run(RELAY_BIN, ['values', 'set', CLUSTER, '--set', 'impersonate=true'], adminEnv);
    }
  });

  it('get -w: the same watch goes on across an agent restart, moved off the draining agent, from its last version', async () => {
    const { file, keyId } = await kubeconfigFile();
    const watch = watchPods(file);
    await waitOutput(watch, 'pod/web-1', 'the first list');
    const isWatch = (x: SeenRequest) => /[?&]watch=(true|1)/.test(x.url);
    await pollUntil({
      what: 'the watch request at the API server',
      read: () => api.seen.some(isWatch),
      until: Boolean,
      timeoutMs: 10_000,
      intervalMs: 50,
    });
    // The watch (a chunked stream held open) carries the same identity as any request.
    expect(identityHeaders(lastSeen(isWatch))).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
    api.pods.add('web-2');
    await waitOutput(watch, 'pod/web-2', 'the ADDED event');
    const seenVersion = api.pods.get('web-2')?.metadata.resourceVersion;
    const watchesBefore = api.seen.filter(isWatch).length;
    // The hub moves the watch off the draining agent at once: the agent's drain does not wait out its 20 s grace
    // for it (a SIGKILL at 15 s would give no exit code 0).
    expect(await agent.stop('SIGTERM', 15_000)).toBe(0);
    startAgent();
    await waitConnected(true);
    api.pods.add('web-3');
    await waitOutput(watch, 'pod/web-3', 'an event after the restart, on the same kubectl watch');
    expect(watch.isRunning()).toBe(true);
    const reopened = api.seen.filter(isWatch).slice(watchesBefore);
    expect(reopened.map((r) => new URL(r.url, 'https://x').searchParams.get('resourceVersion'))).toEqual([
      seenVersion,
    ]);
    expect(identityHeaders(reopened[0]!)).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
    // Nothing seen twice: the reopened watch started after web-2's event.
    expect(watch.output().match(/pod\/web-2/g)).toHaveLength(1);
    await watch.stop();
  }, 120_000);
});

describe("kubectl's view", () => {
  it('kubeconfig --merge prints a next step that works as printed', async () => {
    const file = join(dir, 'merged-config');
    const r = await run(RELAY_BIN, ['kubeconfig', CLUSTER, '--merge', '--kubeconfig', file], adminEnv);
    expect(r.code, r.stderr).toBe(0);
    const printed = /use it with: (kubectl .*)$/m.exec(r.stderr)?.[1];
    expect(printed, r.stderr).toBe(`kubectl --kubeconfig ${file} --context ${CLUSTER}-via-relay version`);
    const [, ...args] = printed!.split(' ');
    const v = await kubectlRaw(args);
    expect(v.stderr).toBe('');
    expect(v.stdout).toContain('Server Version: v1.30.0+test-apiserver');
  });

  it("kubectl version with the API server down prints the relay's reason", async () => {
    const { file } = await kubeconfigFile();
    await api.close();
    const r = await kubectl(file, ['version']);
    expect(r.code).toBe(1);
    // client-go reads /version raw: the relay's reason reaches kubectl as a plain-text body (discovery-error.ts).
    expect(r.stderr.trim().split('\n').at(-1)).toBe(
      `Error from server (InternalError): an error on the server ("agent for cluster ${CLUSTER} could not reach its ` +
        `upstream: dial failed: 127.0.0.1:${api.port}: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:${api.port})") ` +
        'has prevented the request from succeeding',
    );
  });
});
