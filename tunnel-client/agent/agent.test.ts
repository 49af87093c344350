/**
 * The agent library against a real in-process relay over TLS on loopback. The agent's timers run on a
 * FakeClock (advanced by the test); its HTTP calls are real.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { isTunnelError } from '../../shared/errors.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import { startTestRelay, type TestRelay } from '../../test/helpers/test-relay.js';
import { pollUntil } from '../../test/helpers/wait.js';
import { Agent } from './agent.js';
import { AgentApi } from './api.js';
import { register } from './registration.js';
import { StateDir } from './state-dir.js';

let t: TestRelay;
let adminKey: string;
let tmp: string;
const clients: RelayClient[] = [];

beforeAll(async () => {
  t = await startTestRelay();
  adminKey = t.relay.adminKey!;
  tmp = mkdtempSync(join(tmpdir(), 'agent-test-'));
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await t.cleanup();
  rmSync(tmp, { recursive: true, force: true });
});

function newApi(): AgentApi {
  const c = new RelayClient({
    baseUrl: t.relay.url,
    trust: { kind: 'pin', pin: t.relay.caPin },
    timeoutMs: 5000,
  });
  clients.push(c);
  return new AgentApi(c);
}

async function eventually<T>(fn: () => T | undefined | false, what: string, ms = 5000): Promise<T> {
  const found = (v: T | undefined | false): v is T => Boolean(v);
  return (await pollUntil({ what, read: fn, until: found, timeoutMs: ms, intervalMs: 20 })).value;
}

const params = (cluster: string) => ({
  relay: t.relay.url,
  cluster,
  caPin: t.relay.caPin,
  caFile: null,
  agentVersion: '0.1.0',
  upstream: null,
  allow: [],
  claims: { zone: 'a' },
  valuesFiles: [],
});

describe('Agent', () => {
  it('waits while Pending, then leases, follows valuesVersion, and reports a deny', async () => {
    const token = (await t.call('POST', '/api/v1/tokens', { token: adminKey, body: { role: 'bootstrap' } }))
      .body.token;
    const stateDir = new StateDir(join(tmp, 'a1'));
    const api = newApi();
    const state = await register(stateDir, api, token, params('agent-one'));
    expect(state.status).toBe('Pending');

    const clock = new FakeClock();
    const log: string[] = [];
    const agent = new Agent({
      stateDir,
      api: api.withCredential(stateDir.readCredential()),
      valuesFiles: [{ local: { on: true } }, { local: { level: 2 } }],
      clock,
      log: (l) => log.push(l),
      random: () => 0.5,
    });
    const accepted = agent.whenAccepted();
    agent.start();
    await eventually(() => log.some((l) => l.includes('agent-one is Pending: waiting')), 'the Pending line');
    expect(agent.registrationStatus).toBe('Pending');

    expect((await t.call('POST', '/api/v1/clusters/agent-one/accept', { token: adminKey })).status).toBe(200);
    clock.advance(2_000);
    await accepted;
    expect(stateDir.readState().status).toBe('Accepted');
    expect(stateDir.readState().tunnel?.hubPublicKey).toBe(t.relay.hubPublicKey);
    const leased = await eventually(() => {
      const s = stateDir.readStatus();
      return s?.leaseRenewedAt ? s : undefined;
    }, 'the first lease');
    expect(leased.values).toEqual({ local: { on: true, level: 2 } });
    const view = (await t.call('GET', '/api/v1/clusters/agent-one', { token: adminKey })).body;
    expect(view.claims).toEqual({ zone: 'a' });

    // New cluster values: the next lease carries a new valuesVersion and the agent refetches.
    await t.call('PUT', '/api/v1/clusters/agent-one/values', {
      token: adminKey,
      body: { local: { level: 1, x: 'y' } },
    });
    const before = leased.valuesVersion;
    clock.advance(60_000);
    const refreshed = await eventually(() => {
      const s = stateDir.readStatus();
      return s && s.valuesVersion !== before && (s.values.local as { x?: string })?.x === 'y' ? s : undefined;
    }, 'values after the new version');
    // The files sit on top of the relay's values.
    expect(refreshed.values).toEqual({ local: { level: 2, x: 'y', on: true } });

    // Denied: the next lease fails with CLUSTER_DENIED and the agent stops (retrying cannot help),
    // saying so and what to run, in status.json too.
    const stopped = agent.whenStopped().catch((e: unknown) => e);
    await t.call('POST', '/api/v1/clusters/agent-one/deny', { token: adminKey });
    clock.advance(60_000);
    expect(await stopped).toMatchObject({ code: 'CLUSTER_DENIED' });
    expect(stateDir.readState().status).toBe('Denied');
    expect(stateDir.readStatus()?.stopped).toMatch(/^CLUSTER_DENIED: .*cluster accept agent-one/);
    expect(clock.pendingTimers).toBe(0);
    await agent.close();
  });

  it('whenAccepted rejects with CLUSTER_DENIED when a Pending registration is denied; the agent stops', async () => {
    const token = (await t.call('POST', '/api/v1/tokens', { token: adminKey, body: { role: 'bootstrap' } }))
      .body.token;
    const stateDir = new StateDir(join(tmp, 'a2'));
    const api = newApi();
    await register(stateDir, api, token, params('agent-two'));
    const clock = new FakeClock();
    const progress: string[] = [];
    const log: string[] = [];
    const agent = new Agent({
      stateDir,
      api: api.withCredential(stateDir.readCredential()),
      valuesFiles: [],
      clock,
      random: () => 0.5,
      log: (l) => log.push(l),
      progress: (l) => progress.push(l),
    });
    const waiting = agent.whenAccepted().then(
      () => 'accepted',
      (e: unknown) => (isTunnelError(e, 'CLUSTER_DENIED') ? 'denied' : String(e)),
    );
    agent.start();
    // With a progress writer, every poll rewrites the line (a terminal); the log gets none of them.
    await eventually(() => progress.length === 1, 'the first progress line');
    clock.advance(2_000);
    await eventually(() => progress.length === 2, 'the second progress line');
    expect(progress[1]).toMatch(/^cluster agent-two is Pending: waiting .* \(2s\)$/);
    expect(log.some((l) => l.includes('waiting'))).toBe(false);
    await t.call('POST', '/api/v1/clusters/agent-two/deny', { token: adminKey });
    clock.advance(2_000);
    expect(await waiting).toBe('denied');
    expect(stateDir.readState().status).toBe('Denied');
    await expect(agent.whenStopped()).rejects.toMatchObject({ code: 'CLUSTER_DENIED' });
    await expect(agent.whenAccepted()).rejects.toMatchObject({ code: 'CLUSTER_DENIED' });
    expect(clock.pendingTimers).toBe(0);
    await agent.close();
  });

  it('reports the collected Kubernetes facts as claims, renewing early when they change', async () => {
    const created = await t.call('POST', '/api/v1/clusters', {
      token: adminKey,
      body: { name: 'agent-facts' },
    });
    const stateDir = new StateDir(join(tmp, 'a3'));
    const api = newApi();
    await register(stateDir, api, created.body.bootstrap.psk, params('agent-facts'));
    const clock = new FakeClock();
    let facts: Record<string, string> = {};
    let changed = () => {};
    const agent = new Agent({
      stateDir,
      api: api.withCredential(stateDir.readCredential()),
      valuesFiles: [],
      clock,
      random: () => 0.5,
      clusterFacts: (onChange) => {
        changed = onChange;
        return { current: () => facts, start: () => {}, stop: () => {} };
      },
    });
    agent.start();
    await eventually(() => stateDir.readStatus()?.leaseRenewedAt, 'the first lease');
    const view = async () => (await t.call('GET', '/api/v1/clusters/agent-facts', { token: adminKey })).body;
    expect(await view()).toMatchObject({ claims: { zone: 'a' }, kubernetesVersion: null, nodeCount: null });

    facts = { 'kubernetes.version': 'v1.30.2', 'kubernetes.nodes': '3' };
    changed();
    clock.advance(5_000);
    await eventually(async () => (await view()).nodeCount === 3, 'the facts at the relay');
    expect(await view()).toMatchObject({
      claims: { zone: 'a', 'kubernetes.version': 'v1.30.2', 'kubernetes.nodes': '3' },
      kubernetesVersion: 'v1.30.2',
    });
    // The API server stopped answering: the claims go with the next renewal.
    facts = {};
    changed();
    clock.advance(5_000);
    await eventually(async () => (await view()).kubernetesVersion === null, 'the facts gone');
    expect((await view()).claims).toEqual({ zone: 'a' });
    await agent.close();
  });

  it('refuses to register into a state dir that already holds a registration', async () => {
    const stateDir = new StateDir(join(tmp, 'a1'));
    await expect(register(stateDir, newApi(), 'tpsk_unused', params('agent-three'))).rejects.toMatchObject({
      code: 'CONFLICT',
    });
  });
});
