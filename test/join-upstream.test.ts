/**
 * The printed join command gives a working agent, through the real binaries:
 *   - in a pod (KUBERNETES_SERVICE_HOST/PORT set, the service-account CA and token present; the directory comes from
 *     TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR here) a join without --upstream serves the pod's API server: a path-proxy
 *     request reaches it over TLS trusting the pod's CA, carrying the pod's token;
 *   - elsewhere a join without --upstream says that hub requests will be refused, and they are;
 *   - `cluster create --upstream URL` writes --upstream into the printed command, and that command as printed gives an
 *     agent that serves URL;
 *   - the PSK is in the environment of the printed command, never in the agent's argv (what `ps` shows).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSelfSignedCert } from '../relay/ops/tls/self-signed.js';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
  waitConnected,
} from './cli-harness.js';

let relay: Proc;
let ready: ReadyLine;
let relayCa: string;
let adminEnv: NodeJS.ProcessEnv;
const closers: Array<() => void> = [];

/** An upstream that answers every request with what it saw: which server, the path and the Authorization header. */
function answer(served: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ served, path: req.url, authorization: req.headers.authorization ?? null }));
  };
}

async function listening(server: ReturnType<typeof createHttpServer>): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => server.close());
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  buildIfStale();
  const dir = tempDir('join-upstream-');
  ({ proc: relay, ready } = await startServe(join(dir, 'relay'), '127.0.0.1:0'));
  relayCa = join(dir, 'relay', 'tls', 'cert.pem');
  adminEnv = adminEnvOf(ready);
}, 180_000);

afterAll(async () => {
  for (const close of closers) close();
  await relay?.stop();
  await cleanup();
});

async function createCluster(name: string, extra: string[] = []): Promise<string> {
  const r = await run(RELAY_BIN, ['cluster', 'create', name, ...extra], adminEnv);
  expect(r.code, r.stderr).toBe(0);
  const line = r.stdout.split('\n').find((l) => l.includes('tunnel-client join'));
  expect(line).toBeDefined();
  return line!.trim();
}

/** A path-proxy request through the relay with the admin key. */
async function throughRelay(cluster: string): Promise<{ status: number; body: string }> {
  const r = await curl([
    '-sS',
    '--cacert',
    relayCa,
    '-w',
    '\n%{http_code}',
    '-H',
    `Authorization: Bearer ${ready.adminKey}`,
    // Not /version: a relay failure there is answered as plain text for kubectl (relay/data/proxy/discovery-error.ts).
    `${ready.url}/api/v1/clusters/${cluster}/proxy/api/v1/namespaces`,
  ]);
  const cut = r.stdout.lastIndexOf('\n');
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

/** Joins with the printed command's words (--wait), then runs the agent from the state dir. */
async function joinAndRun(
  command: string,
  env: NodeJS.ProcessEnv,
): Promise<{ joinErr: string; agent: Proc }> {
  const stateDir = join(tempDir('join-upstream-agent-'), 's');
  const joined = await run(
    CLIENT_BIN,
    [...joinCommandWords(command), '--state-dir', stateDir, '--wait'],
    env,
    45_000,
  );
  expect(joined.code, joined.stderr).toBe(0);
  const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env);
  return { joinErr: joined.stderr, agent };
}

describe('the default upstream', () => {
  it('in a pod: the pod API server, trusting the pod CA, with the pod token', async () => {
    const sa = join(tempDir('join-upstream-sa-'), 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    const cert = createSelfSignedCert({
      commonName: 'kube-apiserver',
      altNames: ['127.0.0.1'],
      now: Date.now(),
    });
    writeFileSync(join(sa, 'ca.crt'), cert.certPem);
    writeFileSync(join(sa, 'token'), 'pod-sa-token');
    const port = await listening(
      createHttpsServer({ cert: cert.certPem, key: cert.keyPem }, answer('in-cluster')),
    );
    const env = cleanEnv({
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: String(port),
      TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR: sa,
    });
    const { joinErr, agent } = await joinAndRun(await createCluster('in-pod'), env);
    try {
      expect(joinErr).toContain(
        `no --upstream: using this pod's Kubernetes API server https://127.0.0.1:${port} (KUBERNETES_SERVICE_HOST/PORT)`,
      );
      await waitConnected(adminEnv, 'in-pod');
      const r = await throughRelay('in-pod');
      expect(r.status, r.body).toBe(200);
      expect(JSON.parse(r.body)).toEqual({
        served: 'in-cluster',
        path: '/api/v1/namespaces',
        authorization: 'Bearer pod-sa-token',
      });
    } finally {
      await agent.stop();
    }
  }, 90_000);

  it('elsewhere: join warns that hub requests will be refused, and they are', async () => {
    const { joinErr, agent } = await joinAndRun(await createCluster('no-upstream'), cleanEnv());
    try {
      expect(joinErr).toContain(
        'warning: no --upstream and not in a Kubernetes pod: the hub can reach nothing through this agent, so every ' +
          'request to cluster no-upstream through the relay (kubectl, curl) will be refused (STREAM_REFUSED)',
      );
      await waitConnected(adminEnv, 'no-upstream');
      const r = await throughRelay('no-upstream');
      expect(r.status).toBe(502);
      expect(JSON.parse(r.body).message).toBe(
        'agent for cluster no-upstream refused the stream: this agent has no --upstream',
      );
    } finally {
      await agent.stop();
    }
  }, 90_000);
});

describe('cluster create --upstream', () => {
  it('puts --upstream in the printed command, which as printed (PSK in the environment) serves it', async () => {
    const port = await listening(createHttpServer(answer('given')));
    const command = await createCluster('given-upstream', ['--upstream', `http://127.0.0.1:${port}`]);
    expect(command).toMatch(
      new RegExp(
        `^TUNNEL_CLIENT_PSK=tpsk_\\S+ tunnel-client join --relay \\S+ --cluster given-upstream --ca-pin \\S+ --upstream http://127\\.0\\.0\\.1:${port}$`,
      ),
    );
    const psk = /^TUNNEL_CLIENT_PSK=(\S+) /.exec(command)![1]!;
    // Run as printed by a shell, `tunnel-client` on PATH; the agent's argv must not hold the PSK.
    const dir = tempDir('join-upstream-sh-');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'tunnel-client'),
      `#!/bin/sh\nexec '${process.execPath}' ${NODE_FLAGS.join(' ')} '${CLIENT_BIN}' "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const env = cleanEnv({ PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: dir });
    const agent = spawn('/bin/bash', ['-c', command], { env, stdio: 'ignore', detached: true });
    try {
      await waitConnected(adminEnv, 'given-upstream', 30_000);
      const cmdline = readFileSync(`/proc/${agent.pid}/cmdline`, 'utf8').split('\0');
      expect(cmdline.some((w) => w.endsWith('tunnel-client/cli/main.js'))).toBe(true);
      expect(cmdline.join(' ')).not.toContain(psk);
      expect(cmdline).not.toContain('--psk');
      const r = await throughRelay('given-upstream');
      expect(r.status, r.body).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ served: 'given', path: '/api/v1/namespaces' });
    } finally {
      if (agent.pid !== undefined) process.kill(-agent.pid, 'SIGTERM');
      await sleep(500);
      if (agent.pid !== undefined && agent.exitCode === null) process.kill(-agent.pid, 'SIGKILL');
    }
  }, 90_000);

  it('refuses a URL that is not http(s) before anything is created', async () => {
    const r = await run(RELAY_BIN, ['cluster', 'create', 'bad-up', '--upstream', 'ftp://x'], adminEnv);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe('error BAD_INPUT: --upstream "ftp://x" must be an http:// or https:// URL');
    expect((await run(RELAY_BIN, ['cluster', 'get', 'bad-up'], adminEnv)).code).toBe(1);
  });
});

describe('agent --log-format json', () => {
  it('join and run write one JSON object per log line', async () => {
    const command = await createCluster('json-log');
    const stateDir = join(tempDir('join-upstream-json-'), 's');
    const joined = await run(
      CLIENT_BIN,
      [...joinCommandWords(command), '--state-dir', stateDir, '--wait', '--log-format', 'json'],
      cleanEnv(),
      45_000,
    );
    expect(joined.code, joined.stderr).toBe(0);
    const records = joined.stderr
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { time: string; level: string; msg: string });
    expect(records.find((r) => r.msg.startsWith('registered cluster json-log'))?.level).toBe('info');
    expect(records.find((r) => r.msg.startsWith('warning: no --upstream'))?.level).toBe('warn');
    const agent = new Proc(
      CLIENT_BIN,
      ['run', '--state-dir', stateDir],
      cleanEnv({ TUNNEL_CLIENT_LOG_FORMAT: 'json' }),
    );
    try {
      await waitConnected(adminEnv, 'json-log');
      await agent.waitFor((p) => /relay connected/.test(p.stderr), 10_000, 'the connected line');
      for (const l of agent.stderr.split('\n').filter(Boolean)) expect(() => JSON.parse(l), l).not.toThrow();
    } finally {
      await agent.stop();
    }
  }, 90_000);
});
