/**
 * Audit rows of interactive sessions through the path proxy: every exec, attach and port-forward Upgrade writes
 * one row when it ends (action `session.exec|session.attach|session.port-forward`, target the cluster, actor the
 * key id) with the role, the pod and container, the command, start and end, bytes each way and why it ended.
 * The relay sees the upstream's answer line: a session the API server refused ends `refused (HTTP 403)`.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RelayContext } from '../../context/context.js';
import type { KeyPrincipal } from '../../control/model/auth.js';
import type { AuditEntry } from '../../control/store/types.js';
import { requestSource } from '../../fleet/mesh/mesh-source.js';
import { effectiveRole } from './caller-identity.js';

export const SESSION_KINDS = ['exec', 'attach', 'port-forward'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

const SESSION_PATH = /^\/api\/v1\/namespaces\/([^/?]+)\/pods\/([^/?]+)\/(exec|attach|portforward)(?:\?|$)/;
/** Kept per field: a command line or container name longer than this is cut (the row stays small). */
const MAX_FIELD = 512;

export interface SessionTarget {
  kind: SessionKind;
  namespace: string;
  pod: string;
  container: string | null;
  command: string[];
  ports: string[];
}

const cut = (s: string): string => (s.length > MAX_FIELD ? `${s.slice(0, MAX_FIELD)}…` : s);

function decoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The session an upstream path opens (`/api/v1/namespaces/N/pods/P/exec?...`); null for any other path. */
export function sessionTarget(upstreamPath: string): SessionTarget | null {
  const m = SESSION_PATH.exec(upstreamPath);
  if (!m) return null;
  const q = new URLSearchParams(
    upstreamPath.includes('?') ? upstreamPath.slice(upstreamPath.indexOf('?') + 1) : '',
  );
  return {
    kind: m[3] === 'portforward' ? 'port-forward' : (m[3] as 'exec' | 'attach'),
    namespace: cut(decoded(m[1]!)),
    pod: cut(decoded(m[2]!)),
    container: q.has('container') ? cut(q.get('container')!) : null,
    command: q.getAll('command').slice(0, 64).map(cut),
    ports: q.getAll('ports').slice(0, 64).map(cut),
  };
}

type AuditCtx = Pick<RelayContext, 'store' | 'clock' | 'log'> & Partial<Pick<RelayContext, 'mesh'>>;

interface Watch {
  ctx: AuditCtx;
  req: IncomingMessage;
  key: KeyPrincipal;
  cluster: string;
  target: SessionTarget;
  /** The client's socket and the stream to the agent, spliced. */
  socket: Duplex;
  stream: Duplex;
}

/** The status code of an HTTP/1.1 answer's first bytes, or null before the status line is complete. */
function statusOf(head: string): number | null {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  return m ? Number(m[1]) : null;
}

/** Counts the session's bytes and writes its audit row once either side has closed. */
export function auditSession(w: Watch): void {
  const startedAt = w.ctx.clock.wallNow();
  let bytesIn = 0;
  let bytesOut = 0;
  let head = '';
  let status: number | null = null;
  let endedBy: string | null = null;
  w.socket.on('data', (d: Buffer) => {
    bytesIn += d.length;
  });
  w.stream.on('data', (d: Buffer) => {
    bytesOut += d.length;
    if (status === null && head.length < 64) {
      head += d.toString('latin1', 0, 64);
      status = statusOf(head);
    }
  });
  const ended = (who: string) => (err?: Error) => {
    endedBy ??= err ? `${who} error: ${err.message}` : `${who} closed`;
  };
  w.socket.once('error', ended('client'));
  w.stream.once('error', ended('cluster'));
  w.socket.once('end', () => ended('client')());
  w.stream.once('end', () => ended('cluster')());
  // The session is over when either side closes (a client gone, or the cluster's end), whatever the other does.
  let written = false;
  const done = (): void => {
    if (written) return;
    written = true;
    const exitReason = status !== null && status !== 101 ? `refused (HTTP ${status})` : (endedBy ?? 'closed');
    writeRow(w, { startedAt, bytesIn, bytesOut, exitReason });
  };
  w.socket.once('close', done);
  w.stream.once('close', done);
}

function writeRow(
  w: Watch,
  r: { startedAt: number; bytesIn: number; bytesOut: number; exitReason: string },
): void {
  const endedAt = w.ctx.clock.wallNow();
  const t = w.target;
  const entry: AuditEntry = {
    at: endedAt,
    actor: w.key.id,
    action: `session.${t.kind}`,
    target: w.cluster,
    source: requestSource(w.ctx.mesh?.key ?? null, w.req) ?? 'unknown',
    detail: {
      role: effectiveRole(w.key),
      keyRole: w.key.role,
      namespace: t.namespace,
      pod: t.pod,
      container: t.container,
      ...(t.kind !== 'port-forward' ? { command: t.command } : t.ports.length ? { ports: t.ports } : {}),
      startedAt: new Date(r.startedAt).toISOString(),
      endedAt: new Date(endedAt).toISOString(),
      bytesIn: r.bytesIn,
      bytesOut: r.bytesOut,
      exitReason: r.exitReason.slice(0, MAX_FIELD),
    },
  };
  w.ctx.store.appendAudit(entry).then(
    () =>
      w.ctx.log.info(
        { audit: { ...entry, at: new Date(entry.at).toISOString() } },
        `audit ${entry.action} ${entry.target}`,
      ),
    (err: unknown) =>
      w.ctx.log.error({ err, action: entry.action, cluster: entry.target }, 'session audit row not written'),
  );
}
