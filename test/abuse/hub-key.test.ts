/**
 * Abuse replay: an agent registration that uses the hub node's own public key (anyone reads it from
 * the ServerKey frame on /derp). Before the fix, registering it and then unjoining (or an admin's
 * delete or deny of that cluster) closed the hub's own DERP connection: every agent's tunnel answered
 * 503 AGENT_NOT_CONNECTED until a restart. Now every registration path refuses the key (409
 * KEY_RESERVED) and the DERP server never closes a reserved key, so a row that already holds it (an
 * older build, a hand edit) cannot take the hub down either. Checked through the real relay, a real
 * agent and curl through the CONNECT proxy to a real upstream.
 */
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, type Proc, RELAY_BIN, run, tempDir } from '../cli-harness.js';
import {
  api,
  createCluster,
  logLines,
  runAgent,
  type ServedRelay,
  serve,
  serverKeyOf,
  storeCluster,
  upstream,
  viaConnect,
} from './relay-fixture.js';
import { abuseScale } from './scale.js';

let relay: ServedRelay;
let agent: Proc;
let up: { server: http.Server; port: number };
let hubKey: Buffer;

async function tunnelAnswers(): Promise<void> {
  const r = await viaConnect(relay, 'edge-1', up.port);
  expect(`${r.stdout}${r.stderr}`).toBe('hello from edge-1\n200');
}

beforeAll(async () => {
  buildIfStale();
  up = await upstream('edge-1');
  relay = await serve(tempDir('abuse-hub-key-'));
  agent = await runAgent(relay, 'edge-1', up.port);
  hubKey = await serverKeyOf(relay.ready.url);
}, 90_000);

afterAll(async () => {
  await agent?.stop();
  await relay?.proc.stop();
  await cleanup();
  up?.server.close();
});

describe('the hub key cannot be registered', () => {
  it('a cluster PSK or a bootstrap key with the hub key gets 409 KEY_RESERVED; unjoin leaves the tunnel up', async () => {
    await tunnelAnswers();
    const b64 = hubKey.toString('base64');
    const forms = [b64, hubKey.toString('hex'), hubKey.toString('hex').toUpperCase(), ` ${b64}\n`];
    const boot = await run(RELAY_BIN, ['token', 'create', '--role', 'bootstrap'], relay.adminEnv);
    expect(boot.code, boot.stderr).toBe(0);
    const bootstrapKey = boot.stdout.trim();
    const refused: Array<{ status: number; code: string; message: string }> = [];
    for (let i = 0; i < abuseScale(); i++) {
      for (const [j, publicKey] of forms.entries()) {
        const name = `evil-${i}-${j}`;
        const viaPsk = await createCluster(relay, name);
        for (const token of [viaPsk, bootstrapKey]) {
          const body = {
            cluster: token === viaPsk ? name : `${name}-boot`,
            publicKey,
            agentVersion: '0.1.0',
          };
          const r = await api(relay.ready.url, 'POST', '/api/v1/register', { token, body });
          // What the attack did next: unjoin with the credential the registration returned.
          if (r.status === 201) {
            await api(relay.ready.url, 'DELETE', '/api/v1/agent', { token: r.body.agentCredential });
          }
          refused.push({ status: r.status, code: r.body.error?.code, message: r.body.error?.message });
        }
      }
    }
    await tunnelAnswers();
    for (const r of refused) {
      expect(r).toMatchObject({ status: 409, code: 'KEY_RESERVED' });
      expect(r.message).toContain(b64);
    }
    // A refused key is bad input, not a bad credential: no rate-limit strike against the source.
    expect(logLines(relay.proc).some((l) => l.msg === 'registration refused')).toBe(false);
  });
});

describe('a stored cluster that already holds the hub key', () => {
  it('deny, delete and unjoin of it never close the hub: the agent still answers', async () => {
    const hub = hubKey.toString('base64');
    for (let i = 0; i < abuseScale(); i++) {
      storeCluster(relay.dataDir, { name: `legacy-${i}`, publicKey: hub });
      const admin = { token: relay.adminKey };
      const deny = await api(relay.ready.url, 'POST', `/api/v1/clusters/legacy-${i}/deny`, admin);
      expect(deny.status, deny.text).toBe(200);
      await tunnelAnswers();
      const del = await api(relay.ready.url, 'DELETE', `/api/v1/clusters/legacy-${i}`, admin);
      expect(del.status, del.text).toBe(200);
      await tunnelAnswers();

      const credential = storeCluster(relay.dataDir, { name: `unjoin-${i}`, publicKey: hub });
      const unjoin = await api(relay.ready.url, 'DELETE', '/api/v1/agent', { token: credential });
      expect(unjoin.status, unjoin.text).toBe(200);
      await tunnelAnswers();
    }
    const refusedClose = logLines(relay.proc).filter((l) => l.msg === 'derp: a reserved key is never closed');
    expect(refusedClose.length).toBeGreaterThanOrEqual(3 * abuseScale());
    expect(refusedClose[0]).toMatchObject({ key: hub });
  });
});
