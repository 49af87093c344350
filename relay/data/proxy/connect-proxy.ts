/**
 * `CONNECT <cluster>.clusters.local:<port>` on the relay's TLS port: an opaque byte pipe to the
 * cluster's agent, which dials `@port:<port>` (its upstream when the port is the upstream's, else
 * 127.0.0.1:<port>, both subject to its allowlist). TLS from the client runs end to end through it.
 * Node's https server emits 'connect' for these requests (Fastify does not route them).
 */
import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { TunnelError } from '../../../shared/errors.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import { splice } from '../../../shared/net/tunnel-streams/splice.js';
import type { RelayContext } from '../../context/context.js';
import type { LivePipes } from '../../control/api/live-pipes.js';
import { authenticate, canSeeCluster } from '../../control/model/auth.js';
import { proxyToken, requireProxy } from '../../control/model/proxy-auth.js';
import { forwardConnect } from '../../fleet/mesh/mesh-forward.js';
import { type MeshRouting, meshOriginOf, reachableHop, retryHopFor } from '../../fleet/mesh/mesh-routing.js';
import { type HubStreams, retryable } from './hub-streams.js';
import { asTunnelError, proxyStatus, writeErrorResponse } from './raw-response.js';

/** `<cluster>.clusters.local:<port>` (cluster: a DNS-1123 label). */
const CONNECT_TARGET = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)\.clusters\.local:(\d{1,5})$/i;

export function parseConnectTarget(authority: string): { cluster: string; port: number } | null {
  const m = CONNECT_TARGET.exec(authority);
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 1 || port > 65_535) return null;
  return { cluster: m[1]!.toLowerCase(), port };
}

export interface ConnectProxyStats {
  established: number;
  failed: Record<number, number>;
}

export interface ConnectProxyOptions {
  server: HttpsServer | HttpServer;
  ctx: Pick<RelayContext, 'store' | 'clock' | 'log'> & Partial<Pick<RelayContext, 'metrics'>>;
  streams: HubStreams;
  /** Each tunnel is registered here under its access key, which ends it when the key ends. */
  pipes: LivePipes;
  stats?: ConnectProxyStats;
  /** A fleet's mesh: a CONNECT for an agent another replica holds goes there (relay/fleet/mesh/). */
  mesh?: MeshRouting;
}

/** Attaches the CONNECT handler; returns a function that detaches it. */
export function attachConnectProxy(o: ConnectProxyOptions): () => void {
  const { server, ctx, streams, pipes } = o;
  const stats = o.stats ?? { established: 0, failed: {} };
  const log = ctx.log.child({ component: 'connect-proxy' });
  const onConnect = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => {});
    handle(req, socket, head).catch((err: unknown) => {
      const e = asTunnelError(err);
      const status = proxyStatus(e, true);
      stats.failed[status] = (stats.failed[status] ?? 0) + 1;
      if (e.code === 'UNAUTHENTICATED') ctx.metrics?.authFailures.inc();
      if (e.code === 'INTERNAL') log.error({ err }, 'CONNECT failed');
      else log.info({ target: req.url, status, code: e.code }, 'CONNECT refused');
      writeErrorResponse(socket, status, e);
    });
  };
  const handle = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const origin = meshOriginOf(o.mesh, req.headers);
    const target = parseConnectTarget(req.url ?? '');
    if (!target) {
      throw new TunnelError('BAD_INPUT', 'CONNECT target must be <cluster>.clusters.local:<port>');
    }
    let who: Awaited<ReturnType<typeof authenticate>>;
    try {
      who = await authenticate(ctx.store, proxyToken(req.headers), ctx.clock.wallNow());
    } catch (err) {
      throw new TunnelError(
        'UNAUTHENTICATED',
        'missing, unknown, expired or revoked credential: send Proxy-Authorization: Bearer <access key>',
        { cause: err },
      );
    }
    const c = await ctx.store.getCluster(target.cluster);
    // A cluster the caller may not see answers as a missing one: no group named, no existence confirmed.
    if (!c || !canSeeCluster(who, c)) {
      throw new TunnelError('NOT_FOUND', `cluster '${target.cluster}' not found`);
    }
    const key = requireProxy(who, c, 'connect');
    // Registered before the stream opens: a key that ends while it opens ends the tunnel too.
    pipes.hold(key, socket);
    const hop = await reachableHop(o.mesh, origin, c, req);
    if (hop) return forwardConnect(hop, req, { socket, head });
    // Bytes the client sent after its CONNECT travel with the open (no round trip to the agent before they leave).
    let stream: MuxStream;
    try {
      stream = await streams.open(target.cluster, `@port:${target.port}`, { first: head });
    } catch (err) {
      // The agent died or went away under the open: another replica's live agent of the cluster takes it.
      const other = retryable(err) ? await retryHopFor(o.mesh, origin, c) : null;
      if (other === null || !o.mesh?.node) throw err;
      return forwardConnect(o.mesh.node.hopTo(other, req), req, { socket, head });
    }
    if (socket.destroyed) return void stream.destroy();
    stream.on('error', () => {});
    stats.established++;
    log.debug({ cluster: target.cluster, port: target.port, stream: stream.id }, 'CONNECT established');
    // The 200 and what the stream already holds (the answer to bytes sent with the open, when it came in the same
    // read as the agent's reply) leave in one write: one TLS record, one wake-up of the client.
    socket.cork();
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    splice(stream, socket, (e) => new TunnelError('STREAM_RESET', `client: ${e.message}`));
    setImmediate(() => socket.uncork());
  };
  server.on('connect', onConnect);
  return () => server.off('connect', onConnect);
}
