/**
 * Abuse replay: registrations with keys that are not usable Curve25519 public keys, and store rows that
 * hold bad keys. Before the fix an all-zero key was accepted; on the next start the hub logged the
 * failure as `{ err: <string> }`, the logger's err serializer threw on it, and `tunnel-relay serve`
 * exited 1 (INTERNAL) on every start until the database was edited by hand. Now registration refuses
 * low-order and non-canonical keys (400 KEY_UNUSABLE, naming the key) and a bad row in the store is a
 * logged, skipped row: the real binary starts and answers /healthz.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateHubKey } from '../../relay/ops/hub-key.js';
import { generateKeyPair } from '../../shared/keys.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { api, createCluster, logLines, type ServedRelay, serve, storeCluster } from './relay-fixture.js';
import { abuseRuns } from './scale.js';

/** Every low-order encoding libsodium refuses (hex): 0, 1, the two order-8 points, p-1, p, p+1, and aliases. */
const LOW_ORDER_HEX = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800',
  '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'cdeb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880',
  '4c9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7',
  'd9ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
  'daffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
  'dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
];

let relay: ServedRelay | undefined;

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

async function restart(): Promise<ServedRelay> {
  const r = relay!;
  const code = await r.proc.stop();
  expect(code, r.proc.stderr).toBe(0);
  relay = await serve(r.dataDir, r.adminKey);
  return relay;
}

describe('registration refuses unusable keys', () => {
  it('low-order and non-canonical keys get 400 KEY_UNUSABLE naming the key; the relay restarts fine', async () => {
    buildIfStale();
    relay = await serve(tempDir('abuse-bad-keys-'));
    const psk = await createCluster(relay, 'low-order');
    // Non-canonical: bit 255 set, or u in [p, 2^255): random ones on top of the fixed list.
    const nonCanonical = fc.sample(
      fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => {
        const k = Buffer.from(b);
        k[31] = k[31]! | 0x80;
        return k.toString('hex');
      }),
      abuseRuns(4),
    );
    for (const hex of [...LOW_ORDER_HEX, ...nonCanonical]) {
      const b64 = Buffer.from(hex, 'hex').toString('base64');
      for (const publicKey of [b64, hex]) {
        const body = { cluster: 'low-order', publicKey, agentVersion: '0.1.0' };
        const r = await api(relay.ready.url, 'POST', '/api/v1/register', { token: psk, body });
        expect(r.status, `${publicKey}: ${r.text}`).toBe(400);
        expect(r.body.error.code).toBe('KEY_UNUSABLE');
        expect(r.body.error.message).toContain(b64);
      }
    }
    await restart();
    expect((await api(relay!.ready.url, 'GET', '/healthz')).status).toBe(200);
  });
});

describe('bad rows in the store are skipped at start', () => {
  it('low-order keys, a malformed key, a bad preshared key, the hub key, bad claims and a bad address: serve starts', async () => {
    const r = relay!;
    const hubKey = loadOrCreateHubKey(r.dataDir).publicKey.toString('base64');
    const rows = [
      // The canonical ones (bit 255 clear, u < p); X25519 ignores bit 255, so the others name other points.
      ...LOW_ORDER_HEX.slice(0, 5).map((hex, i) => ({
        name: `low-order-${i}`,
        publicKey: Buffer.from(hex, 'hex').toString('base64'),
      })),
      { name: 'zero-key-hex', publicKey: LOW_ORDER_HEX[0]! },
      { name: 'malformed-key', publicKey: 'not a key at all' },
      { name: 'bad-psk', publicKey: generateKeyPair().publicKey.toString('base64'), presharedKey: '%%%' },
      { name: 'hub-key', publicKey: hubKey },
    ];
    // Rows whose other columns are damaged: the cluster is still listed, with no claims or no address.
    const damaged = [
      { name: 'bad-claims', publicKey: generateKeyPair().publicKey.toString('base64'), claims: '{not json' },
      { name: 'bad-address', publicKey: generateKeyPair().publicKey.toString('base64'), addrIndex: 1 },
    ];
    for (const row of [...rows, ...damaged]) storeCluster(r.dataDir, row);
    const started = await restart();
    expect((await api(started.ready.url, 'GET', '/healthz')).status).toBe(200);
    // Every bad row is named in the log, once, at warn, with a reason.
    const lines = logLines(started.proc);
    for (const row of rows) {
      const named = lines.filter((l) => l.cluster === row.name);
      expect(named.length, `${row.name}: ${started.proc.stderr.slice(-3000)}`).toBe(1);
      expect(named[0]).toMatchObject({ level: 40 });
      expect(String(named[0]!.msg)).toMatch(/unusable|not added|skipped/);
    }
    // The control plane reads the rows too: listing them still works.
    const list = await api(started.ready.url, 'GET', '/api/v1/clusters', { token: started.adminKey });
    expect(list.status).toBe(200);
    expect(list.body.items.length).toBe(1 + rows.length + damaged.length);
    const shown = await api(started.ready.url, 'GET', '/api/v1/clusters/bad-claims', {
      token: started.adminKey,
    });
    expect(shown.status, shown.text).toBe(200);
  });
});
