/**
 * Who is calling: access keys (roles), agent credentials, and the role checks the routes use
 * (the table in docs/API.md). Credentials come from `Authorization: Bearer`, or for the agent-values
 * route only, the `token` query parameter. Unknown, expired and revoked credentials all answer
 * 401 UNAUTHENTICATED with the same message.
 */
import type { FastifyRequest } from 'fastify';
import { TunnelError } from '../../../shared/errors.js';
import { hashSecret, secretKind } from '../../ops/secrets.js';
import type { ClusterRecord, ClusterStatus, Store } from '../store/types.js';
import { checkName, isDns1123Label } from './names.js';

export type Role =
  | 'admin'
  | 'viewer'
  | 'bootstrap'
  | `group-editor:${string}`
  | `cluster-proxy:${string}`
  | `cluster-proxy-read:${string}`;

/** The prefixes of the roles scoped to one cluster's path proxy (see proxyScope). */
const SCOPED_PREFIXES = ['cluster-proxy:', 'cluster-proxy-read:'] as const;

/** An access key; `expiresAt` (wall-clock ms, null: never) lets holders of live connections end them at expiry. */
export interface KeyPrincipal {
  kind: 'key';
  id: string;
  role: Role;
  group: string | null;
  expiresAt: number | null;
  /**
   * A key scoped to one cluster's proxy: the creation time of the cluster it was minted for (it reaches that
   * cluster only, never a later one of the same name); null for every other key.
   */
  clusterCreatedAt: number | null;
  /** A kubeconfig key: the role of the key that minted it (absent: not recorded, or not a kubeconfig key). */
  mintedRole?: Role;
}

export type Principal =
  | KeyPrincipal
  | {
      kind: 'agent';
      cluster: string;
      credentialId: string;
      status: ClusterStatus;
      /** The agent key the credential was issued to (null: issued before credentials named keys). */
      publicKey: string | null;
    };

export function parseRole(text: unknown): Role | null {
  if (text === 'admin' || text === 'viewer' || text === 'bootstrap') return text;
  if (typeof text === 'string' && text.startsWith('group-editor:') && isDns1123Label(text.slice(13))) {
    return text as Role;
  }
  for (const prefix of SCOPED_PREFIXES) {
    if (typeof text === 'string' && text.startsWith(prefix) && isDns1123Label(text.slice(prefix.length))) {
      return text as Role;
    }
  }
  return null;
}

/** What a key scoped to one cluster's path proxy may do there; every other route refuses such a key. */
export interface ProxyScope {
  cluster: string;
  /**
   * The createdAt of the cluster the key was minted for: a cluster of that name created later is not its own
   * (null: no cluster is; authenticate refuses such a key).
   */
  clusterCreatedAt: number | null;
  write: boolean;
}

/**
 * The scope of a `cluster-proxy:NAME` (read and write) or `cluster-proxy-read:NAME` (GET/HEAD/OPTIONS)
 * key, minted by POST /api/v1/clusters/:name/kubeconfig; null for every other principal.
 */
export function proxyScope(p: Principal): ProxyScope | null {
  if (p.kind !== 'key') return null;
  const clusterCreatedAt = p.clusterCreatedAt;
  if (p.role.startsWith('cluster-proxy:'))
    return { cluster: p.role.slice(14), clusterCreatedAt, write: true };
  if (p.role.startsWith('cluster-proxy-read:')) {
    return { cluster: p.role.slice(19), clusterCreatedAt, write: false };
  }
  return null;
}

function isScopedRole(role: Role): boolean {
  return scopedClusterOf(role) !== null;
}

/** The cluster a `cluster-proxy:NAME` or `cluster-proxy-read:NAME` role is scoped to; null for other roles. */
export function scopedClusterOf(role: Role): string | null {
  const prefix = SCOPED_PREFIXES.find((p) => role.startsWith(p));
  return prefix === undefined ? null : role.slice(prefix.length);
}

/** The bearer token of the request (header first, then `?token=` when allowed), or null. */
export function bearerToken(req: FastifyRequest, allowQuery = false): string | null {
  const h = req.headers.authorization;
  if (typeof h === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    return m ? m[1]! : null;
  }
  if (allowQuery) {
    const q = (req.query as Record<string, unknown> | undefined)?.token;
    if (typeof q === 'string' && q.length > 0) return q;
  }
  return null;
}

const UNAUTH = 'missing, unknown, expired or revoked credential';

/** Resolves an access key or agent credential; PSKs are not valid here (only on /register). */
export async function authenticate(store: Store, token: string | null, nowWall: number): Promise<Principal> {
  if (token === null)
    throw new TunnelError('UNAUTHENTICATED', 'no credential: send Authorization: Bearer <key>');
  const kind = secretKind(token);
  if (kind === 'accessKey') {
    const k = await store.findAccessKey(hashSecret(token));
    if (!k || k.revokedAt !== null || (k.expiresAt !== null && k.expiresAt <= nowWall)) {
      throw new TunnelError('UNAUTHENTICATED', UNAUTH);
    }
    const role = parseRole(k.role);
    if (!role) throw new TunnelError('UNAUTHENTICATED', UNAUTH);
    // A scoped key must name the cluster it was minted for; one that does not could only reach the wrong one.
    const clusterCreatedAt = isScopedRole(role) ? (k.minted?.clusterCreatedAt ?? null) : null;
    if (isScopedRole(role) && clusterCreatedAt === null) throw new TunnelError('UNAUTHENTICATED', UNAUTH);
    const group = role.startsWith('group-editor:') ? role.slice(13) : null;
    const mintedRole = isScopedRole(role) ? parseRole(k.minted?.role) : null;
    return {
      kind: 'key',
      id: k.id,
      role,
      group,
      expiresAt: k.expiresAt,
      clusterCreatedAt,
      ...(mintedRole === null ? {} : { mintedRole }),
    };
  }
  if (kind === 'agent') {
    const a = await store.findAgent(hashSecret(token));
    if (!a) throw new TunnelError('UNAUTHENTICATED', UNAUTH);
    return {
      kind: 'agent',
      cluster: a.cluster,
      credentialId: a.credentialId,
      status: a.status,
      publicKey: a.publicKey,
    };
  }
  throw new TunnelError('UNAUTHENTICATED', UNAUTH);
}

export function actorOf(p: Principal): string {
  return p.kind === 'key' ? p.id : `agent:${p.cluster}`;
}

function forbid(p: Principal, what: string): never {
  const who = p.kind === 'key' ? `role ${p.role}` : 'an agent credential';
  throw new TunnelError('FORBIDDEN', `${who} may not ${what}`);
}

export function requireAdmin(p: Principal, what: string): void {
  if (!(p.kind === 'key' && p.role === 'admin')) forbid(p, what);
}

/** admin or viewer (audit, platform values read). */
export function requireReader(p: Principal, what: string): void {
  if (!(p.kind === 'key' && (p.role === 'admin' || p.role === 'viewer'))) forbid(p, what);
}

/** May read clusters of `group` (null = may list at all; the caller filters by group). */
export function requireClusterRead(p: Principal, group: string | null, what: string): void {
  if (p.kind === 'key' && (p.role === 'admin' || p.role === 'viewer')) return;
  if (p.kind === 'key' && p.group !== null && (group === null || group === p.group)) return;
  forbid(p, what);
}

/**
 * Whether `p` may learn that cluster `c` exists: admin and viewer see every cluster, a group-editor the
 * clusters of its group, an agent credential its own cluster, a bootstrap key none. Routes answer a cluster
 * the caller may not see exactly as a missing one (404 NOT_FOUND, `clusterNotFound`), so a 403 never
 * confirms that a name exists or says which group holds it.
 */
export function canSeeCluster(p: Principal, c: { name: string; group: string }): boolean {
  if (p.kind === 'agent') return p.cluster === c.name;
  if (p.role === 'admin' || p.role === 'viewer') return true;
  return p.group !== null && p.group === c.group;
}

/** The one NOT_FOUND of a cluster route, for a missing cluster and for one the caller may not see. */
export function clusterNotFound(name: string): TunnelError {
  return new TunnelError('NOT_FOUND', `cluster "${name}" does not exist`);
}

/** The named cluster, or NOT_FOUND when it does not exist or `p` may not see it (the same reply for both). */
export async function visibleCluster(store: Store, p: Principal, name: string): Promise<ClusterRecord> {
  const c = await store.getCluster(checkName(name, 'cluster name'));
  if (!c || !canSeeCluster(p, c)) throw clusterNotFound(name);
  return c;
}

export function requireClusterWrite(p: Principal, group: string, what: string): void {
  if (p.kind === 'key' && p.role === 'admin') return;
  if (p.kind === 'key' && p.group !== null && group === p.group) return;
  forbid(p, what);
}
