/**
 * Attack replay against two real `tunnel-relay serve` replicas sharing one throw-away PostgreSQL: an
 * attacker spreads wrong PSKs and wrong access keys over both replicas, in concurrent bursts, from one
 * source, hoping each replica counts only its own share. The limit is one for both: exactly 10 failures
 * answer 401 and are warned about, every further one answers 429 on either replica, and a correct PSK
 * sent from that same source still joins.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { buildIfStale, cleanup, type Proc, type ReadyLine, startServe, tempDir } from '../cli-harness.js';
import { cleanupAll } from '../helpers/cleanup.js';
import { requestFrom } from '../helpers/from-source.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../helpers/postgres.js';
import { fleetServeArgs, writeFleetFiles } from '../helpers/relay-fleet.js';
import { abuseScale } from './scale.js';

/** The relay's limit: failures per source within the window (docs/LIMITS.md). */
const LIMIT = 10;
const SOURCE = '127.0.0.23';
const scale = abuseScale();

interface Replica {
  proc: Proc;
  ready: ReadyLine;
  caPem: string;
}

let server: ThrowawayPostgres;
const replicas: Replica[] = [];

beforeAll(async () => {
  buildIfStale();
  server = await startThrowawayPostgres();
  const db = await server.createDatabase('relay');
  const storeUrl = `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`;
  const passwordFile = join(tempDir('abuse-replica-secret-'), 'password');
  writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
  // Replicas of one fleet share the hub key and the certificate (one with others refuses to start).
  const fleet = writeFleetFiles(tempDir('abuse-replica-fleet-'));
  for (let i = 0; i < 2; i++) {
    const { proc, ready } = await startServe(
      tempDir('abuse-replica-'),
      '127.0.0.1:0',
      fleetServeArgs(fleet, { url: storeUrl, passwordFile }, { mesh: false }),
    );
    replicas.push({ proc, ready, caPem: fleet.caPem });
  }
}, 180_000);

afterAll(async () => {
  for (const r of replicas) await r.proc.stop();
  await cleanup();
  await server?.stop();
  await cleanupAll();
});

function register(r: Replica, token: string, cluster: string) {
  return requestFrom({
    url: r.ready.url,
    caPem: r.caPem,
    localAddress: SOURCE,
    method: 'POST',
    path: '/api/v1/register',
    token,
    body: { cluster, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
  });
}

describe('failed registrations spread over two replicas', () => {
  it('count once: exactly the limit answers 401, the rest 429 on both, and a valid PSK still joins', async () => {
    const [a, b] = replicas;
    const adminKey = a!.ready.adminKey!;
    const attempts = 40 * scale;
    const statuses: number[] = [];
    for (let burst = 0; burst < attempts; burst += 10) {
      const wave = Array.from({ length: 10 }, (_, i) => {
        const token = i % 2 === 0 ? `tpsk_${'x'.repeat(43)}` : `trk_${'y'.repeat(43)}`;
        return register(i % 4 < 2 ? a! : b!, token, 'victim');
      });
      statuses.push(...(await Promise.all(wave)).map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(attempts - LIMIT);
    const warned = replicas.map(
      (r) => r.proc.stderr.split('\n').filter((l) => l.includes('registration refused')).length,
    );
    expect(warned[0]! + warned[1]!).toBe(LIMIT);
    // The limited source still joins with a valid PSK, on either replica.
    const created = await requestFrom({
      url: b!.ready.url,
      caPem: b!.caPem,
      localAddress: '127.0.0.1',
      method: 'POST',
      path: '/api/v1/clusters',
      token: adminKey,
      body: { name: 'victim' },
    });
    expect(created.status).toBe(201);
    const joined = await register(a!, created.body.bootstrap.psk, 'victim');
    expect(joined.status).toBe(201);
    expect(joined.body).toMatchObject({ cluster: 'victim', status: 'Accepted' });
  });
});
