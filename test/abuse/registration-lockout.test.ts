/**
 * Attack replay against the real `tunnel-relay serve`: an attacker fails registrations from the agent's
 * own address (a shared NAT) and from many other addresses naming the agent's cluster, and tries to
 * escape or fill the per-source limit with forged X-Forwarded-For headers. The real `tunnel-client join`
 * must still get in at once, and so must a correct PSK sent from the limited source itself. Sources are
 * loopback addresses 127.0.0.x, which Linux lets a client bind.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../../shared/keys.js';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import { CLIENT_BIN, cleanEnv, RELAY_BIN, run, tempDir } from '../cli-harness.js';
import { type FromSourceReply, requestFrom } from '../helpers/from-source.js';
import { serveForFile } from '../helpers/served-relay.js';
import { abuseScale } from './scale.js';

/** The relay's limit: failures per source within the window (docs/LIMITS.md). */
const LIMIT = 10;
const WINDOW_S = 300;
const scale = abuseScale();

const relay = serveForFile({ prefix: 'abuse-lockout' });

/** Wrong credentials of both kinds /register takes: cluster PSKs and (bootstrap) access keys. */
const wrongPsk = (i: number) => `${i % 3 === 2 ? 'trk_' : 'tpsk_'}${String(i).padStart(43, 'W')}`;
const pub = () => keyToBase64(generateKeyPair().publicKey);

function register(
  from: string,
  cluster: string,
  psk: string,
  headers: Record<string, string> = {},
): Promise<FromSourceReply> {
  return requestFrom({
    url: relay.ready.url,
    caPem: relay.caPem,
    localAddress: from,
    method: 'POST',
    path: '/api/v1/register',
    token: psk,
    body: { cluster, publicKey: pub(), agentVersion: '0.1.0' },
    headers,
  });
}

async function createCluster(name: string): Promise<{ psk: string; joinCommand: string }> {
  const r = await run(RELAY_BIN, ['cluster', 'create', name, '--output', 'json'], relay.adminEnv);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).bootstrap;
}

function expectLimited(r: FromSourceReply, from: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(429);
  expect(r.body.error.code).toBe('RATE_LIMITED');
  const retry = Number(r.headers['retry-after']);
  expect(retry).toBeGreaterThan(0);
  expect(retry).toBeLessThanOrEqual(WINDOW_S);
  expect(r.body.error.message).toContain(`source ${from}`);
  expect(r.body.error.message).toMatch(new RegExp(`retry after (${retry}|${retry - 1}) s`));
}

describe('registration lockout', () => {
  it('failures from the agent address and from many sources naming its cluster do not keep it out', async () => {
    const victim = await createCluster('victim');
    const spare = await createCluster('spare');

    // 1. From the address the agent will use: first LIMIT failures refused, the rest limited.
    const shared = '127.0.0.1';
    for (let i = 0; i < LIMIT * scale + 2; i++) {
      const r = await register(shared, i % 2 === 0 ? 'victim' : `other-${i}`, wrongPsk(i));
      if (i < LIMIT) expect([r.status, r.body.error.code]).toEqual([401, 'BOOTSTRAP_REJECTED']);
      else expectLimited(r, shared);
    }

    // 2. From many other sources, each naming the victim cluster a few times: each source only answers for itself.
    const sources = Array.from(
      { length: LIMIT * scale + 2 },
      (_, i) => `127.0.${1 + Math.floor(i / 200)}.${3 + (i % 200)}`,
    );
    for (const from of sources) {
      for (let k = 0; k < 2; k++) {
        const r = await register(from, 'victim', wrongPsk(k));
        expect([r.status, r.body.error.code], from).toEqual([401, 'BOOTSTRAP_REJECTED']);
      }
    }

    // 3. Forged X-Forwarded-For neither escapes the limit nor charges another source.
    const forger = '127.0.0.2';
    for (let i = 0; i < LIMIT; i++) {
      const r = await register(forger, 'victim', wrongPsk(i), { 'x-forwarded-for': `127.0.9.${i}` });
      expect(r.status).toBe(401);
    }
    expectLimited(
      await register(forger, 'victim', wrongPsk(0), { 'x-forwarded-for': '127.0.9.250' }),
      forger,
    );
    for (let i = 0; i < LIMIT * scale; i++) {
      await register('127.0.0.250', 'victim', wrongPsk(i), { 'x-forwarded-for': '127.0.0.251' });
    }
    const bystander = await register('127.0.0.251', 'spare', wrongPsk(1));
    expect([bystander.status, bystander.body.error.code]).toEqual([401, 'BOOTSTRAP_REJECTED']);

    // 4. The real agent joins at once from the limited shared address, with its PSK.
    const words = joinCommandWords(victim.joinCommand);
    const state = join(tempDir('abuse-lockout-agent-'), 'state');
    const join1 = await run(
      CLIENT_BIN,
      [...words, '--state-dir', state, '--wait', '--wait-timeout', '30s', '--output', 'json'],
      cleanEnv(),
      45_000,
    );
    expect(join1.code, join1.stderr).toBe(0);
    expect(JSON.parse(join1.stdout)).toMatchObject({ cluster: 'victim', status: 'Accepted' });

    // 5. A correct PSK from the forging source (limited itself) registers too.
    const r = await register(forger, 'spare', spare.psk);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ cluster: 'spare', status: 'Accepted' });

    // 6. So does a valid bootstrap key from the limited shared address (the registration stays Pending).
    const made = await run(
      RELAY_BIN,
      ['token', 'create', '--role', 'bootstrap', '--output', 'json'],
      relay.adminEnv,
    );
    const boot = await register(shared, 'victim-boot', JSON.parse(made.stdout).token);
    expect(boot.status, JSON.stringify(boot.body)).toBe(201);
    expect(boot.body).toMatchObject({ cluster: 'victim-boot', status: 'Pending' });

    // 7. Limited failures are not logged one by one: one "registration refused" line per 401 answered.
    const refusedLines = relay.proc.stderr
      .split('\n')
      .filter((l) => l.includes('"registration refused"')).length;
    expect(refusedLines).toBe(LIMIT + sources.length * 2 + LIMIT + LIMIT + 1);
  });
});
