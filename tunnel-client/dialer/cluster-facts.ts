/**
 * The Kubernetes facts the agent reports as claims (shared/api/kube-facts.ts): it asks its default upstream's API
 * server `GET /version` and `GET /api/v1/nodes?limit=1` (one node plus `metadata.remainingItemCount`, so the count
 * costs one small answer however large the cluster), with the dialer's trust and token (upstream-trust.ts), at start
 * and then every FACTS_EVERY_MS. An answer that is not one of these (no API server, no right to list nodes, a body
 * over MAX_FACTS_BODY, a value that is not a version or a count) leaves that fact out: the claims are then absent.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import {
  KUBERNETES_VERSION_CLAIM,
  kubernetesVersionOf,
  NODE_COUNT_CLAIM,
  nodeCountOf,
} from '../../shared/api/kube-facts.js';
import { readToken } from './token-injector.js';
import type { UpstreamTrust } from './upstream-trust.js';

export const FACTS_EVERY_MS = 5 * 60_000;
export const FACTS_TIMEOUT_MS = 5_000;
/** The two answers are small (a /version document, one node); a larger body is not read. */
export const MAX_FACTS_BODY = 256 * 1024;

export interface ClusterFactsOptions {
  /** The agent's default upstream (an http(s) URL of its API server). */
  readonly upstream: string;
  readonly trust: UpstreamTrust;
  /** The facts changed (first collected, or different from the last time). */
  readonly onChange: () => void;
  readonly everyMs?: number;
}

/** GET `path` on the upstream: the parsed JSON body of a 200 answer, else null. */
function getJson(o: ClusterFactsOptions, path: string): Promise<unknown> {
  const url = new URL(o.upstream);
  const tls = url.protocol === 'https:';
  const token = o.trust.tokenFile ? readToken(o.trust.tokenFile) : null;
  const host = o.trust.dial?.host ?? url.hostname.replace(/^\[|\]$/g, '');
  const port = o.trust.dial?.port ?? (Number(url.port) || (tls ? 443 : 80));
  const servername = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const req = (tls ? https : http).request({
      host,
      port,
      path,
      method: 'GET',
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      timeout: FACTS_TIMEOUT_MS,
      agent: false,
      ...(tls
        ? {
            ca: o.trust.ca,
            rejectUnauthorized: !o.trust.insecure,
            servername: net.isIP(servername) ? undefined : servername,
          }
        : {}),
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_FACTS_BODY) return void req.destroy();
        chunks.push(c);
      });
      res.on('error', () => resolve(null));
      // A body cut off (over the cap, a reset) closes without 'end': no answer (after 'end' this changes nothing).
      res.on('close', () => resolve(null));
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve(null);
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          resolve(null);
        }
      });
    });
    req.end();
  });
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** The node count of a `limit=1` node list: its items plus `metadata.remainingItemCount`; null when unknown. */
export function nodeCountOfList(list: unknown): number | null {
  const items = field(list, 'items');
  if (!Array.isArray(items)) return null;
  const meta = field(list, 'metadata');
  const remaining = field(meta, 'remainingItemCount');
  const more = field(meta, 'continue');
  if (remaining === undefined) return typeof more === 'string' && more !== '' ? null : items.length;
  return typeof remaining === 'number' && Number.isSafeInteger(remaining) && remaining >= 0
    ? nodeCountOf(String(items.length + remaining))
    : null;
}

/** Collects both facts once: the claims to report (absent facts left out). */
export async function collectFacts(o: ClusterFactsOptions): Promise<Record<string, string>> {
  const [version, nodes] = await Promise.all([getJson(o, '/version'), getJson(o, '/api/v1/nodes?limit=1')]);
  const facts: Record<string, string> = {};
  const gitVersion = field(version, 'gitVersion');
  const v = typeof gitVersion === 'string' ? kubernetesVersionOf(gitVersion) : null;
  if (v !== null) facts[KUBERNETES_VERSION_CLAIM] = v;
  const count = nodeCountOfList(nodes);
  if (count !== null) facts[NODE_COUNT_CLAIM] = String(count);
  return facts;
}

/** The facts, kept current in the background; `current()` is what the next lease reports. */
export class ClusterFacts {
  readonly #o: ClusterFactsOptions;
  #facts: Record<string, string> = {};
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(o: ClusterFactsOptions) {
    this.#o = o;
  }

  current(): Readonly<Record<string, string>> {
    return this.#facts;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#refresh();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }

  async #refresh(): Promise<void> {
    let facts: Record<string, string> = {};
    try {
      facts = await collectFacts(this.#o);
    } catch {
      // An unreadable token file: no facts this time.
    }
    if (!this.#running) return;
    const changed = JSON.stringify(facts) !== JSON.stringify(this.#facts);
    this.#facts = facts;
    if (changed) this.#o.onChange();
    this.#timer = setTimeout(() => void this.#refresh(), this.#o.everyMs ?? FACTS_EVERY_MS);
    this.#timer.unref();
  }
}
