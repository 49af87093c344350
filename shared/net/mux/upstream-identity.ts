/**
 * The caller identity the hub hands the agent in the OPEN text of an `@upstream` stream (docs/PROTOCOL.md):
 *
 *   @upstream                                       the agent's own identity (impersonation off)
 *   @upstream?user=U&group=G[&group=G...][&ro=1]    impersonate user U in groups G
 *
 * Only the hub opens streams to an agent (over the WireGuard session with the hub's key), so the agent trusts
 * this text and nothing the HTTP request itself carries. `ro=1` marks a read-only caller whose write the relay
 * left to the API server's RBAC: an agent that cannot impersonate refuses such a stream. Names are checked
 * on both sides (no control characters, spaces or separators can reach a header).
 */
import { TunnelError } from '../../errors.js';

export const UPSTREAM_TARGET = '@upstream';
export const MAX_IDENTITY_GROUPS = 8;
const NAME = /^[A-Za-z0-9][A-Za-z0-9:._@-]{0,252}$/;

export interface CallerIdentity {
  /** Impersonate-User, e.g. `tunnel-relay:k_abc`. */
  readonly user: string;
  /** Impersonate-Group values, e.g. `tunnel-relay:viewer`. */
  readonly groups: readonly string[];
  /** A read-only caller the relay let through to be judged by the API server. */
  readonly readOnly: boolean;
}

function checkName(what: string, v: string): string {
  if (!NAME.test(v))
    throw new TunnelError(
      'BAD_INPUT',
      `caller identity: ${what} ${JSON.stringify(v.slice(0, 64))} is not a valid name`,
    );
  return v;
}

/** The OPEN text for the default upstream, with the caller's identity when impersonating (null: none). */
export function upstreamTarget(identity: CallerIdentity | null): string {
  if (identity === null) return UPSTREAM_TARGET;
  if (identity.groups.length > MAX_IDENTITY_GROUPS) {
    throw new TunnelError(
      'BAD_INPUT',
      `caller identity: ${identity.groups.length} groups is over ${MAX_IDENTITY_GROUPS}`,
    );
  }
  const q = new URLSearchParams();
  q.append('user', checkName('user', identity.user));
  for (const g of identity.groups) q.append('group', checkName('group', g));
  if (identity.readOnly) q.append('ro', '1');
  return `${UPSTREAM_TARGET}?${q.toString()}`;
}

/**
 * The identity in an `@upstream...` OPEN text: null for plain `@upstream`, undefined when `text` is not an
 * upstream target at all; BAD_INPUT for a malformed one.
 */
export function parseUpstreamTarget(text: string): CallerIdentity | null | undefined {
  if (text === UPSTREAM_TARGET) return null;
  if (!text.startsWith(`${UPSTREAM_TARGET}?`)) return undefined;
  const q = new URLSearchParams(text.slice(UPSTREAM_TARGET.length + 1));
  for (const k of q.keys()) {
    if (k !== 'user' && k !== 'group' && k !== 'ro')
      throw new TunnelError('BAD_INPUT', `caller identity: unknown field '${k.slice(0, 32)}'`);
  }
  const users = q.getAll('user');
  if (users.length !== 1) throw new TunnelError('BAD_INPUT', 'caller identity: want exactly one user');
  const groups = q.getAll('group');
  if (groups.length > MAX_IDENTITY_GROUPS) {
    throw new TunnelError(
      'BAD_INPUT',
      `caller identity: ${groups.length} groups is over ${MAX_IDENTITY_GROUPS}`,
    );
  }
  const ro = q.getAll('ro');
  if (ro.length > 1 || (ro.length === 1 && ro[0] !== '1'))
    throw new TunnelError('BAD_INPUT', 'caller identity: ro must be 1');
  return {
    user: checkName('user', users[0]!),
    groups: groups.map((g) => checkName('group', g)),
    readOnly: ro.length === 1,
  };
}
