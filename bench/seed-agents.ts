/** Agents registered and Accepted straight in a relay's SQLite store, for the benchmarks that start many. */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SqliteStore } from '../relay/control/store/sqlite.js';
import type { AuditEntry, Store } from '../relay/control/store/types.js';
import { hashSecret, newId, newSecret } from '../relay/ops/secrets.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';

/** An agent's private key, tunnel address and per-pair preshared key (base64). */
export interface SeededAgent {
  priv: string;
  address: string;
  psk: string;
}

/** Registers `n` agents (real key pairs) as Accepted clusters directly in the store (setup, not measured). */
export async function seedAgents(dir: string, n: number): Promise<SeededAgent[]> {
  const store = new SqliteStore(join(dir, 'relay.db'));
  const t = Date.now();
  const audit = { at: t, actor: 'bench', action: 'seed', target: '', source: 'local', detail: {} };
  const out: SeededAgent[] = [];
  for (let i = 0; i < n; i++) {
    const kp = generateKeyPair();
    const psk = newSecret('psk');
    await store.createCluster(
      { name: `storm-${i}`, group: 'default', displayName: `storm-${i}`, createdAt: t },
      { id: newId('p_'), hash: hashSecret(psk), expiresAt: t + 86_400_000 },
      audit,
    );
    const r = await store.register(
      {
        cluster: `storm-${i}`,
        publicKey: keyToBase64(kp.publicKey),
        agentVersion: '0.1.0',
        claims: {},
        now: t,
        credential: { id: newId('a_'), hash: hashSecret(newSecret('agent')), expiresAt: null },
        presharedKey: keyToBase64(randomBytes(32)),
        via: { kind: 'psk', pskHash: hashSecret(psk) },
      },
      audit,
    );
    if (!r.ok || !r.cluster.address || !r.cluster.presharedKey) throw new Error(`seed failed: ${String(r)}`);
    out.push({ priv: keyToBase64(kp.privateKey), address: r.cluster.address, psk: r.cluster.presharedKey });
  }
  await store.close();
  return out;
}

/** A cluster created with `psk`, to register with its keys (the control-plane benches' seed). */
export interface SeedRegistration {
  cluster: string;
  psk: string;
  publicKey: string;
  presharedKey: string;
  claims?: Record<string, string>;
  now: number;
  audit: AuditEntry;
}

/** Registers a created cluster straight in the store with a fresh agent credential, which it returns. */
export async function registerSeeded(store: Store, seed: SeedRegistration): Promise<string> {
  const cred = newSecret('agent');
  const r = await store.register(
    {
      cluster: seed.cluster,
      publicKey: seed.publicKey,
      agentVersion: '0.1.0',
      claims: seed.claims ?? {},
      now: seed.now,
      credential: { id: newId('a_'), hash: hashSecret(cred), expiresAt: null },
      presharedKey: seed.presharedKey,
      via: { kind: 'psk', pskHash: hashSecret(seed.psk) },
    },
    seed.audit,
  );
  if (!r.ok) throw new Error(`seed registration failed: ${r.reason}`);
  return cred;
}
