/**
 * Drain and failure of relay replicas, with real processes: three `tunnel-relay serve` on one PostgreSQL
 * behind haproxy (TCP, health-checked on /readyz; replicas-fixture.ts), and a real agent that joined and
 * connects through haproxy.
 * - SIGTERM of the agent's replica: /readyz answers 503 at once while /healthz stays 200, haproxy takes it
 *   out, the agent is back through another replica within 10 s, and the process exits 0 within its grace.
 * - A CONNECT tunnel to the agent held open through its replica: SIGTERM exits 0 within the grace anyway, cutting
 *   the tunnel and saying so; a second SIGTERM exits at once.
 * - kill -9 of each replica in turn: the agent is back within 10 s, and a change acknowledged by the killed
 *   replica just before is in the store.
 */
import { connect, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, sleep } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { waitFor } from './helpers/wait.js';
import { RelayFleet, type Replica } from './replicas-fixture.js';

const GRACE_S = 3;
const AGENT = 'edge-fleet';
const fleet = new RelayFleet({ replicas: 3, drainGraceS: GRACE_S });

beforeAll(async () => {
  buildIfStale();
  await fleet.start();
  await fleet.joinAgent(AGENT);
}, 120_000);

afterAll(async () => {
  await fleet.stopAll();
  await cleanup();
  await cleanupAll();
});

/** The replica the agent is connected to, once it is on exactly one. */
async function agentHome(timeoutMs = 10_000): Promise<Replica> {
  let home: Replica[] = [];
  await waitFor(
    async () => {
      home = await fleet.agentReplicas();
      return home.length === 1;
    },
    timeoutMs,
    'the agent on one replica',
    50,
  );
  return home[0]!;
}

/** Resolves once a path-proxy request to the agent's upstream, sent straight to `r`, answers. */
async function servedBy(r: Replica, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const reply = await fleet.get(fleet.urlOf(r), `/api/v1/clusters/${AGENT}/proxy/hello`);
      return reply.status === 200 && reply.body === `hello from ${AGENT}`;
    },
    timeoutMs,
    `the agent answering through ${r.name}`,
    50,
  );
}

describe('SIGTERM of the replica the agent is on', () => {
  it('fails readiness at once, moves the agent to another replica, and exits 0 within the grace', async () => {
    const home = await agentHome();
    await servedBy(home, 10_000);
    const proc = home.proc!;
    const signalled = Date.now();
    proc.child.kill('SIGTERM');
    const [ready, health] = await Promise.all([
      fleet.get(fleet.urlOf(home), '/readyz', ''),
      fleet.get(fleet.urlOf(home), '/healthz', ''),
    ]);
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toMatchObject({ error: { code: 'CLOSED' } });
    expect(health.status).toBe(200);
    await waitFor(
      async () => !(await fleet.lb.serverStatus())[home.name]?.startsWith('UP'),
      2_000,
      'haproxy taking the draining replica out',
      20,
    );
    const code = await proc.exited;
    const exitedAfter = Date.now() - signalled;
    expect(code).toBe(0);
    expect(exitedAfter).toBeLessThan(GRACE_S * 1000 + 1_000);
    expect(proc.stdout).toContain('"event":"stopped"');
    const next = await agentHome(10_000);
    expect(next).not.toBe(home);
    await servedBy(next, 10_000 - (Date.now() - signalled));
    expect(Date.now() - signalled).toBeLessThan(10_000);
    await fleet.startReplica(home);
    await fleet.lb.waitForUp(fleet.replicas.map((r) => r.name));
  }, 60_000);
});

/** A CONNECT tunnel through replica `r` to the agent's upstream, left open; resolves once it is established. */
async function holdTunnel(r: Replica): Promise<TLSSocket> {
  const socket = connect({ host: '127.0.0.1', port: r.port, ca: fleet.caPem, servername: 'localhost' });
  socket.on('error', () => {});
  socket.write(
    `CONNECT ${AGENT}.clusters.local:${fleet.upstreamPort} HTTP/1.1\r\nhost: x\r\n` +
      `proxy-authorization: Bearer ${fleet.adminKey}\r\n\r\n`,
  );
  let answer = '';
  await waitFor(
    () => {
      const chunk = socket.read() as Buffer | null;
      if (chunk) answer += chunk.toString();
      return answer.includes('\r\n\r\n');
    },
    10_000,
    'the CONNECT answer',
    20,
  );
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
  return socket;
}

describe('a hub request that outlasts the drain grace', () => {
  it('is cut when the grace ends, and the process exits 0 within it; a second SIGTERM exits at once', async () => {
    const home = await agentHome();
    const tunnel = await holdTunnel(home);
    const closed = new Promise<number>((resolve) => tunnel.once('close', () => resolve(Date.now())));
    const proc = home.proc!;
    const signalled = Date.now();
    proc.child.kill('SIGTERM');
    const code = await proc.exited;
    const exitedAfter = Date.now() - signalled;
    expect(code).toBe(0);
    // The tunnel held the agent here for the grace less the 2 s kept for moving and closing.
    expect(exitedAfter).toBeGreaterThanOrEqual((GRACE_S - 2) * 1000 - 100);
    expect(exitedAfter).toBeLessThan(GRACE_S * 1000 + 1_000);
    expect(await closed).toBeLessThanOrEqual(Date.now());
    expect(proc.stderr).toContain('draining: grace ran out with hub requests in flight');
    await fleet.startReplica(home);
    await fleet.lb.waitForUp(fleet.replicas.map((r) => r.name));

    const again = fleet.replicas.find((r) => r !== home)!;
    const twice = Date.now();
    again.proc!.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    again.proc!.child.kill('SIGTERM');
    expect(await again.proc!.exited).toBe(130);
    expect(Date.now() - twice).toBeLessThan(1_000);
    await fleet.startReplica(again);
    await fleet.lb.waitForUp(fleet.replicas.map((r) => r.name));
  }, 60_000);
});

describe('kill -9 of each replica in turn', () => {
  it('the agent is back within 10 s, and what the killed replica acknowledged is in the store', async () => {
    // The agent's replica first, so at least one kill takes the agent's connection down; then the others.
    const first = await agentHome();
    for (const victim of [first, ...fleet.replicas.filter((r) => r !== first)]) {
      const wasHome = (await agentHome()) === victim;
      const name = `kept-${victim.name}`;
      const created = await fleet.post(fleet.urlOf(victim), '/api/v1/clusters', { name });
      expect(created.status).toBe(201);
      const killed = Date.now();
      victim.proc!.child.kill('SIGKILL');
      expect(await victim.proc!.exited).not.toBe(0);
      const home = await agentHome(10_000);
      expect(home).not.toBe(victim);
      await servedBy(home, 10_000 - (Date.now() - killed));
      const back = Date.now() - killed;
      expect(back).toBeLessThan(10_000);
      console.log(
        `kill -9 ${victim.name} (agent ${wasHome ? 'on it' : 'elsewhere'}): agent served after ${back} ms`,
      );
      const kept = await fleet.get(fleet.urlOf(home), `/api/v1/clusters/${name}`);
      expect(kept.status).toBe(200);
      await fleet.startReplica(victim);
      await fleet.lb.waitForUp(fleet.replicas.map((r) => r.name));
      await sleep(200);
    }
  }, 90_000);
});
