/**
 * A rolling restart of a relay fleet under load, with real processes: three `tunnel-relay serve` on one
 * PostgreSQL behind haproxy (replicas-fixture.ts), a real agent joined through haproxy, and a client that sends a
 * path-proxy request to the agent's upstream through haproxy every 100 ms. Every replica in turn gets SIGTERM
 * (drain), exits, and starts again on its port; the agent moves between replicas as they drain, and hub requests
 * reach it through the mesh from whichever replica haproxy picks. At most 1 % of the requests may fail during the
 * roll and none in the seconds after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { waitFor } from './helpers/wait.js';
import { RelayFleet, type Reply } from './replicas-fixture.js';

const AGENT = 'edge-roll';
const fleet = new RelayFleet({ replicas: 3, drainGraceS: 5 });

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

/** A request to the agent through haproxy every `everyMs`, each result kept, until stop(). */
class SteadyClient {
  readonly results: Array<{ at: number; reply: Reply }> = [];
  readonly #timer: NodeJS.Timeout;
  readonly #pending = new Set<Promise<void>>();

  constructor(everyMs: number) {
    this.#timer = setInterval(() => {
      const at = Date.now();
      const p = fleet.get(fleet.publicUrl, `/api/v1/clusters/${AGENT}/proxy/hello`).then((reply) => {
        this.results.push({ at, reply });
      });
      this.#pending.add(p);
      void p.finally(() => this.#pending.delete(p));
    }, everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all([...this.#pending]);
  }

  failuresBetween(from: number, to: number): Array<{ at: number; reply: Reply }> {
    return this.results.filter(
      (r) => r.at >= from && r.at < to && !(r.reply.status === 200 && r.reply.body === `hello from ${AGENT}`),
    );
  }

  countBetween(from: number, to: number): number {
    return this.results.filter((r) => r.at >= from && r.at < to).length;
  }
}

describe('a rolling restart of every replica', () => {
  it('fails at most 1 % of requests sent every 40 ms through haproxy, and none after it', async () => {
    const names = fleet.replicas.map((r) => r.name);
    // Every 40 ms: a roll of ~9 s is then ~220 requests, so "1 %" allows a failure; at 100 ms it was under 100
    // requests, where any one failure was already more than 1 %.
    const client = new SteadyClient(40);
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      const rollStart = Date.now();
      for (const r of fleet.replicas) {
        r.proc!.child.kill('SIGTERM');
        expect(await r.proc!.exited).toBe(0);
        await fleet.startReplica(r);
        await fleet.lb.waitForUp(names, 15_000);
      }
      // The agent is settled on some replica again before "after" starts counting.
      await waitFor(
        async () => (await fleet.agentReplicas()).length === 1,
        10_000,
        'the agent on one replica',
        50,
      );
      const rollEnd = Date.now();
      await new Promise((r) => setTimeout(r, 3_000));
      const afterEnd = Date.now();
      await client.stop();
      const during = client.failuresBetween(rollStart, rollEnd);
      const sent = client.countBetween(rollStart, rollEnd);
      const after = client.failuresBetween(rollEnd, afterEnd);
      console.log(
        `rolling restart: ${during.length} of ${sent} requests failed during the roll (${((100 * during.length) / sent).toFixed(2)} %), ` +
          `${after.length} of ${client.countBetween(rollEnd, afterEnd)} after it; roll took ${rollEnd - rollStart} ms`,
      );
      for (const f of [...during, ...after])
        console.log(`  +${f.at - rollStart} ms: ${f.reply.status} ${f.reply.body.slice(0, 160)}`);
      expect(sent).toBeGreaterThan(100);
      expect(during.length).toBeLessThanOrEqual(Math.floor(sent / 100));
      expect(after).toEqual([]);
    } finally {
      await client.stop();
    }
  }, 120_000);
});
