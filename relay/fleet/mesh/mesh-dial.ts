/**
 * Dials another replica's mesh URL over TLS and checks the certificate it presents against the fleet's CA pin
 * (the SHA-256 of the one certificate every replica serves, as agents check it): nothing is written before the
 * pin matches. A dial that does not finish within the timeout, or a certificate with another pin, fails with
 * MESH_UNREACHABLE naming the cluster and the replica's URL.
 *
 * A replica's TLS session (its ticket) is kept after a dial whose certificate matched the pin, and offered on the
 * next dial to that URL: a resumed session proves the peer holds the secret of the one that was pinned (a resumed
 * handshake carries no certificate), and it spares both sides a full handshake per forwarded request, which under
 * load keeps a busy replica's mesh dials within their timeout. At most MAX_MESH_SESSIONS URLs are kept.
 */
import { isIP } from 'node:net';
import { connect, createSecureContext, type TLSSocket } from 'node:tls';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { TlsSessionCache } from '../../../shared/kit/http/tls-session-cache.js';
import { pinOfCertificate } from '../../../shared/tls-pin.js';

/** A mesh dial (TCP and TLS) not finished after this long fails. */
export const MESH_DIAL_TIMEOUT_MS = 5_000;
/** Replica URLs whose TLS session is kept for resumption (the store holds at most MAX_REPLICAS replicas). */
export const MAX_MESH_SESSIONS = 128;

/** The last pinned TLS session per `meshUrl|caPin`. */
const sessions = new TlsSessionCache(MAX_MESH_SESSIONS);

/**
 * The OpenSSL context of every mesh dial (trust is the pin, so it holds no CA): one built per dial cost 0.35 ms
 * of CPU per forwarded request on a new connection.
 */
const meshContext = createSecureContext();

export interface MeshDialTarget {
  /** https://HOST:PORT of the replica. */
  meshUrl: string;
  /** The cluster the request is for (named in errors); null when it is for any hub replica (relay mode). */
  cluster: string | null;
}

function unreachable(t: MeshDialTarget, why: string, cause?: Error): TunnelError {
  return new TunnelError(
    'MESH_UNREACHABLE',
    t.cluster === null
      ? `hub replica ${t.meshUrl} cannot be reached: ${why}`
      : `the agent of cluster ${t.cluster} is connected to replica ${t.meshUrl}, which cannot be reached: ${why}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Whether a dial failed because nothing listens at the replica's URL (the connection was refused): the replica
 * died, and its heartbeat has not aged out of the store yet.
 */
export function isRefusal(err: unknown): boolean {
  if (!isTunnelError(err, 'MESH_UNREACHABLE')) return false;
  const cause = err.cause;
  return typeof cause === 'object' && cause !== null && 'code' in cause && cause.code === 'ECONNREFUSED';
}

export function dialReplica(
  t: MeshDialTarget,
  caPin: string,
  timeoutMs = MESH_DIAL_TIMEOUT_MS,
): Promise<TLSSocket> {
  const url = new URL(t.meshUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const sessionKey = `${t.meshUrl}|${caPin}`;
  return new Promise((resolve, reject) => {
    let pinned = false;
    const socket = connect({
      secureContext: meshContext,
      session: sessions.get(sessionKey),
      host,
      port: Number(url.port || 443),
      // Trust is the pin below, as for agents: the fleet's certificate is often self-signed.
      rejectUnauthorized: false,
      // SNI names a host; an address literal is sent none.
      servername: isIP(host) === 0 ? host : undefined,
      ALPNProtocols: ['http/1.1'],
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(unreachable(t, `no TLS connection within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(unreachable(t, err.code ?? err.message, err));
    });
    socket.on('session', (session: Buffer) => {
      if (pinned) sessions.keep(sessionKey, session);
    });
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      // Resumed: the session was kept from a pinned handshake (the only ones kept).
      if (socket.isSessionReused()) {
        pinned = true;
        resolve(socket);
        return;
      }
      const actual = pinOfCertificate(socket.getPeerCertificate().raw ?? Buffer.alloc(0));
      if (actual !== caPin) {
        sessions.forget(sessionKey);
        socket.destroy();
        reject(unreachable(t, `it presented a certificate with pin ${actual}, not the fleet's ${caPin}`));
        return;
      }
      pinned = true;
      resolve(socket);
    });
  });
}
