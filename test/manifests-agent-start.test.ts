/**
 * The agent workload as the install URL serves it, started the way the kubelet would: the container's
 * `sh -c` script with the container's environment (the PSK from the join Secret), `tunnel-client` on
 * PATH as in the image. The first start joins and connects; after the pod is "rescheduled" (process
 * stopped, started again on the same state volume, the Secret gone) the agent runs from its saved state
 * with the same key, without a PSK.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { Secret } from 'kubernetes-models/v1/Secret';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type ServedRelay, serve } from './abuse/relay-fixture.js';
import { buildIfStale, cleanEnv, cleanup, curl, ROOT, tempDir, waitConnected } from './cli-harness.js';
import { validateYamlStream } from './helpers/kubernetes-schema.js';

let relay: ServedRelay;
let bin: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
  buildIfStale();
  const prefix = tempDir('agent-start-bin-');
  execFileSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--offline', '--no-audit', '--no-fund', ROOT],
    {
      stdio: 'pipe',
      timeout: 60_000,
    },
  );
  bin = join(prefix, 'bin');
  relay = await serve(tempDir('agent-start-relay-'));
}, 120_000);

afterAll(async () => {
  for (const c of started) c.kill('SIGKILL');
  await relay?.proc.stop();
  await cleanup();
});

/** Starts the container's command with its environment; the state volume is `volume` instead of /state. */
function startContainer(c: IContainer, env: Record<string, string>, volume: string): ChildProcess {
  const script = (c.args?.[2] ?? '').replaceAll('/state/', `${volume}/`);
  const child = spawn('sh', ['-c', script], {
    env: { ...cleanEnv(env), PATH: `${bin}:${process.env.PATH}` },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(child);
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('the agent workload from the install URL', () => {
  it('joins on the first start and runs from its state after a restart without the Secret', async () => {
    const created = await api(relay.ready.url, 'POST', '/api/v1/clusters', {
      token: relay.adminKey,
      body: { name: 'k8s-agent' },
    });
    const fetched = await curl(['-fsSk', created.body.bootstrap.installUrl]);
    expect(fetched.code, fetched.stderr).toBe(0);
    const docs = validateYamlStream(fetched.stdout);
    const sts = docs.find((d) => StatefulSet.is(d));
    const container = StatefulSet.is(sts) ? sts.spec?.template.spec?.containers[0] : undefined;
    const secret = docs.find((d) => Secret.is(d));
    const psk = Secret.is(secret) ? secret.stringData?.psk : undefined;
    if (!container || !psk) throw new Error('no container or no PSK in the served manifests');
    const plain = Object.fromEntries(
      (container.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])),
    );
    const volume = tempDir('agent-start-volume-');

    const first = startContainer(container, { ...plain, TUNNEL_CLIENT_PSK: psk }, volume);
    await waitConnected(relay.adminEnv, 'k8s-agent', 30_000);
    const key = (await api(relay.ready.url, 'GET', '/api/v1/clusters/k8s-agent', { token: relay.adminKey }))
      .body.publicKey;
    await stop(first);

    const second = startContainer(container, plain, volume);
    await waitConnected(relay.adminEnv, 'k8s-agent', 30_000);
    const after = await api(relay.ready.url, 'GET', '/api/v1/clusters/k8s-agent', { token: relay.adminKey });
    expect(after.body.publicKey).toBe(key);
    await stop(second);
  }, 90_000);
});
