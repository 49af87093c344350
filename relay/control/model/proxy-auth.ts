/**
 * Who may use the hub's proxies (docs/PROTOCOL.md):
 *   admin                any cluster, CONNECT and path proxy
 *   group-editor:G       clusters in group G, CONNECT and path proxy
 *   viewer               path proxy only, GET/HEAD/OPTIONS without Upgrade (read-only); never CONNECT
 *   cluster-proxy:C      path proxy of cluster C only (minted by the kubeconfig route; the very cluster it was
 *                        minted for, never a later cluster named C); never CONNECT
 *   cluster-proxy-read:C path proxy of cluster C only, read-only; never CONNECT
 *   bootstrap, agents    never
 * CONNECT takes `Proxy-Authorization: Bearer <key>` or `Basic base64(user:<key>)` (what Go's and curl's
 * proxy support send from a proxy URL's user info); the path proxy `Authorization: Bearer <key>`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { TunnelError } from '../../../shared/errors.js';
import { type KeyPrincipal, type Principal, type ProxyScope, proxyScope } from './auth.js';

export type ProxyUse = 'connect' | 'read' | 'write';

/** The token in a Proxy-Authorization header (Bearer, or Basic with the key as password or user). */
export function proxyToken(headers: IncomingHttpHeaders): string | null {
  const h = headers['proxy-authorization'];
  if (typeof h !== 'string') return null;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(h);
  if (bearer) return bearer[1]!;
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(h);
  if (!basic) return null;
  const text = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  const user = colon < 0 ? text : text.slice(0, colon);
  const pass = colon < 0 ? '' : text.slice(colon + 1);
  return pass || user || null;
}

/** The bearer token of an Authorization header. */
export function bearer(headers: IncomingHttpHeaders): string | null {
  const h = headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

/** The cluster a proxy request goes to. */
export interface ProxyTarget {
  name: string;
  group: string;
  createdAt: number;
}

/** Whether the key `p` may use the proxy this way on cluster `target` (the table above). */
export function mayUseProxy(p: KeyPrincipal, target: ProxyTarget, use: ProxyUse): boolean {
  if (p.role === 'admin') return true;
  if (p.group !== null && p.group === target.group) return true;
  if (p.role === 'viewer' && use === 'read') return true;
  const scope = proxyScope(p);
  return scope !== null && use !== 'connect' && isScopeOf(scope, target) && (scope.write || use === 'read');
}

/** Whether `target` is the very cluster a scoped key was minted for (its name, and not a later cluster of that name). */
export function isScopeOf(scope: ProxyScope, target: ProxyTarget): boolean {
  return (
    scope.cluster === target.name &&
    scope.clusterCreatedAt !== null &&
    scope.clusterCreatedAt === target.createdAt
  );
}

/** The key principal `p`; FORBIDDEN unless it may use the proxy this way on cluster `target`. */
export function requireProxy(p: Principal, target: ProxyTarget, use: ProxyUse): KeyPrincipal {
  const { group } = target;
  if (p.kind === 'key' && mayUseProxy(p, target, use)) return p;
  const who = p.kind === 'key' ? `role ${p.role}` : 'an agent credential';
  const what =
    use === 'connect'
      ? `CONNECT to clusters in group ${group}`
      : `${use === 'read' ? 'read' : 'write'} through the proxy of clusters in group ${group}`;
  throw new TunnelError('FORBIDDEN', `${who} may not ${what}`);
}

/** Methods a viewer may send through the path proxy. */
export function isReadOnly(method: string | undefined, upgrade: boolean): boolean {
  return !upgrade && (method === 'GET' || method === 'HEAD' || method === 'OPTIONS');
}
