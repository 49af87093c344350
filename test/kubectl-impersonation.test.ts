/**
 * kubectl through the relay to a cluster's API server, as the relay user who asked: the real relay, the real
 * agent run as if in a pod (KUBERNETES_SERVICE_HOST/PORT and a service-account dir with ca.crt and token,
 * `--upstream https://kubernetes.default.svc:443` as the generated manifests pass it), real kubectl, and a test
 * API server (test/helpers/kube-api/) whose impersonation rights, own rights and RBAC bindings are read from the manifests
 * `tunnel-relay manifests agent` prints. Asserts the exact credential and impersonation headers the API server saw.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
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
import { pollUntil, sleep } from './helpers/wait.js';

const CLUSTER = 'pod-1';
let relay: Proc;
let adminEnv: NodeJS.ProcessEnv;
let dir: string;
let saDir: string;
let stateDir: string;
let api: KubeApiServer;
let agent: Proc;
let podEnv: NodeJS.ProcessEnv;

interface Kubectl {
  code: number;
  stdout: string;
  stderr: string;
}

function kubectl(kubeconfig: string, args: string[], input?: string): Promise<Kubectl> {
  return kubectlRaw(['--kubeconfig', kubeconfig, '--request-timeout', '15s', ...args], input);
}

function kubectlRaw(args: string[], input?: string): Promise<Kubectl> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', args, {
      env: cleanEnv({ HOME: dir }),
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

  it('a SPDY/3.1 exec Upgrade reaches the API server with the same identity, client headers dropped', async () => {
    const { file, keyId } = await kubeconfigFile();
    const kc = parseYaml(readFileSync(file, 'utf8'));
    const cluster = kc.clusters[0].cluster;
    const req = https.request(
      `${cluster.server}/api/v1/namespaces/default/pods/web-1/exec?command=cat&stdin=true`,
      {
        method: 'POST',
        ca: Buffer.from(cluster['certificate-authority-data'], 'base64').toString(),
        headers: {
          authorization: `Bearer ${kc.users[0].user.token}`,
          connection: 'Upgrade',
          upgrade: 'SPDY/3.1',
          'x-stream-protocol-version': 'v4.channel.k8s.io',
          'Impersonate-User': 'system:admin',
          'impersonate-group': 'system:masters',
        },
      },
    );
    req.end();
    const [res, socket] = (await once(req, 'upgrade')) as [IncomingMessage, Duplex];
    expect(res.statusCode).toBe(101);
    socket.write('raw bytes');
    const [echo] = (await once(socket, 'data')) as [Buffer];
    expect(echo.toString()).toBe('raw bytes');
    socket.destroy();
    expect(api.execs.at(-1)?.protocol).toBe('SPDY/3.1');
    expect(identityHeaders(lastSeen((x) => x.url.includes('/pods/web-1/exec')))).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
  });

  it('a port-forward Upgrade is audited with its ports', async () => {
    const { file, keyId } = await kubeconfigFile();
    const kc = parseYaml(readFileSync(file, 'utf8'));
    const cluster = kc.clusters[0].cluster;
    const req = https.request(
      `${cluster.server}/api/v1/namespaces/default/pods/web-1/portforward?ports=8080`,
      {
        method: 'POST',
        ca: Buffer.from(cluster['certificate-authority-data'], 'base64').toString(),
        headers: {
          authorization: `Bearer ${kc.users[0].user.token}`,
          connection: 'Upgrade',
          upgrade: 'SPDY/3.1',
        },
      },
    );
    req.end();
    const [res, socket] = (await once(req, 'upgrade')) as [IncomingMessage, Duplex];
    expect(res.statusCode).toBe(101);
    socket.write('12345');
    await once(socket, 'data');
    socket.destroy();
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
    expect(rows.value.find((i) => i.actor === keyId)?.detail).toMatchObject({
      role: 'admin',
      pod: 'web-1',
      ports: ['8080'],
      bytesIn: 5,
      exitReason: expect.stringMatching(/^client /),
    });
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

  it('get -w: sees changes, ends when the agent goes away, and watches again once it is back', async () => {
    const { file, keyId } = await kubeconfigFile();
    const watch = watchPods(file);
    await waitOutput(watch, 'pod/web-1', 'the first list');
    // The watch (a chunked stream held open) carries the same identity as any request.
    const watchRequest = lastSeen((x) => /[?&]watch=(true|1)/.test(x.url));
    expect(identityHeaders(watchRequest)).toEqual([
      'authorization: Bearer sa-token-2',
      `impersonate-user: tunnel-relay:${keyId}`,
      'impersonate-group: tunnel-relay:admin',
    ]);
    api.pods.add('web-2');
    await waitOutput(watch, 'pod/web-2', 'the ADDED event');
    await agent.stop('SIGTERM');
    const ended = await Promise.race([watch.exited, sleep(30_000).then(() => null)]);
    expect(ended, watch.output()).not.toBeNull();
    startAgent();
    await waitConnected(true);
    const again = watchPods(file);
    await waitOutput(again, 'pod/web-2', 'the list after the restart');
    api.pods.add('web-3');
    await waitOutput(again, 'pod/web-3', 'an event after the restart');
    await again.stop();
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
