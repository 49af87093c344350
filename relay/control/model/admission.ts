/**
 * Admission: which agent keys the data plane lets in. A key is admitted while it is registered to a cluster
 * that is Accepted and has its tunnel address and preshared key issued.
 */
import type { ClusterRecord, Store } from '../store/types.js';

export interface AdmittedPeer {
  cluster: string;
  publicKey: string;
  /** 100.64.x.y */
  address: string;
  /** Base64 per-pair WireGuard preshared key. */
  presharedKey: string;
}

/** The admitted peer a stored cluster is, or null if it is not admitted. */
export function admittedPeerOf(c: ClusterRecord): AdmittedPeer | null {
  if (c.status !== 'Accepted' || c.publicKey === null || c.address === null || c.presharedKey === null)
    return null;
  return { cluster: c.name, publicKey: c.publicKey, address: c.address, presharedKey: c.presharedKey };
}

/** `key` as base64: a string as it is, 32 raw bytes (as the DERP server passes them) encoded; else null. */
function base64Key(key: string | Uint8Array): string | null {
  if (typeof key === 'string') return key;
  return key.length === 32 ? Buffer.from(key).toString('base64') : null;
}

export class Admission {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The peer if `key` (base64, or 32 raw bytes) is admitted, else null. */
  async admittedPeer(key: string | Uint8Array): Promise<AdmittedPeer | null> {
    const publicKey = base64Key(key);
    if (publicKey === null) return null;
    const c = await this.#store.findClusterByKey(publicKey);
    if (c === null || c.status !== 'Accepted' || c.address === null || c.presharedKey === null) return null;
    return { cluster: c.name, publicKey, address: c.address, presharedKey: c.presharedKey };
  }

  /** Every admitted peer (for the hub node's peer table at start; then follow the events). */
  async admittedPeers(): Promise<AdmittedPeer[]> {
    const out: AdmittedPeer[] = [];
    const accepted = new Set<string>();
    for (const c of await this.#store.listClusters()) if (c.status === 'Accepted') accepted.add(c.name);
    // Every agent of an accepted cluster: its primary and its replicas (store/agent-replicas.ts).
    for (const a of await this.#store.listAgents()) {
      if (!accepted.has(a.cluster) || a.address === null || a.presharedKey === null) continue;
      out.push({
        cluster: a.cluster,
        publicKey: a.publicKey,
        address: a.address,
        presharedKey: a.presharedKey,
      });
    }
    return out;
  }
}
