/**
 * `/api/v1/clusters/:name/proxy/*`: any method, forwarded as HTTP/1.1 over one mux stream per request
 * to the agent's default upstream (`@upstream`: the agent speaks TLS to it when its URL is https).
 * Request and response bodies stream both ways (watches, large uploads). The caller's Authorization
 * header (the relay access key), any Impersonate-* header and hop-by-hop headers are not forwarded.
 * The stream's OPEN text names the caller for the agent to impersonate (caller-identity.ts), unless the
 * cluster's values turn impersonation off; with it on, a read-only caller's write is not refused here but
 * left to the API server's RBAC (it acts there as `tunnel-relay:viewer`).
 *
 * Upgrade requests (WebSocket, SPDY: `kubectl exec`) arrive on the https server's 'upgrade' event:
 * after the same checks the request head is re-written onto a new stream and the bytes are spliced
 * both ways, so the upstream's 101 (or refusal) reaches the client unchanged.
 *
 * Plain requests are hijacked in a route-level onRequest hook: nothing is parsed or buffered.
 * A request body is framed upstream exactly as it arrived (shared/kit/http/body-framing.ts: chunked stays
 * chunked, a Content-Length stays that length); ambiguous framing is refused with 400 BAD_FRAMING
 * before anything is opened, so one client request is one upstream request. An exec, attach or port-forward
 * Upgrade writes a session audit row when it ends (session-audit.ts). Every request and upgrade is held in the
 * live-pipe registry under its access key (live-pipes.ts): it ends when the key is revoked or expires.
 *
 * The relay's own errors here are Kubernetes `Status` objects (kube-status.ts), not the API's error
 * envelope: kubectl is the client, and it prints a Status's reason and message.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { isTunnelError, TunnelError } from '../../../shared/errors.js';
import { type BodyFraming, bodyFraming, framingHeaders } from '../../../shared/kit/http/body-framing.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import { upstreamTarget } from '../../../shared/net/mux/upstream-identity.js';
import { splice } from '../../../shared/net/tunnel-streams/splice.js';
import type { RelayContext } from '../../context/context.js';
import type { LivePipes } from '../../control/api/live-pipes.js';
import {
  authenticate,
  canSeeCluster,
  type KeyPrincipal,
  type Principal,
  proxyScope,
} from '../../control/model/auth.js';
import { clusterImpersonates } from '../../control/model/impersonation.js';
import {
  bearer,
  isReadOnly,
  isScopeOf,
  type ProxyUse,
  requireProxy,
} from '../../control/model/proxy-auth.js';
import type { ClusterRecord } from '../../control/store/types.js';
import type { MeshOrigin } from '../../fleet/mesh/mesh-auth.js';
import { MESH_KEY_HEADER, MESH_VIA_HEADER } from '../../fleet/mesh/mesh-auth.js';
import { forwardRequest, forwardUpgrade, type MeshHop } from '../../fleet/mesh/mesh-forward.js';
import { type MeshRouting, meshOriginOf, reachableHop, retryHopFor } from '../../fleet/mesh/mesh-routing.js';
import { MESH_SOURCE_HEADER } from '../../fleet/mesh/mesh-source.js';
import { endToEndHeaders } from '../../ops/http/end-to-end-headers.js';
import { exchange, type RequestHead } from '../../ops/http/http-exchange.js';
import { callerIdentity, withoutClientCredentials } from './caller-identity.js';
import { discoveryErrorAnswer, isDiscoveryRequest } from './discovery-error.js';
import type { HubFailureLog } from './hub-failure-log.js';
import { type HubStreams, retryable } from './hub-streams.js';
import { kubeStatus } from './kube-status.js';
import { OpenOnFirstWrite } from './open-on-first-write.js';
import { asTunnelError, proxyStatus, writeErrorResponse } from './raw-response.js';
import { auditSession, sessionTarget } from './session-audit.js';
import { forwardWatch, isWatchRequest } from './watch-resume.js';

const PROXY_PATH = /^\/api\/v1\/clusters\/([^/?#]+)\/proxy(\/[^?#]*)?(\?.*)?$/;

/** Headers that belong to one hop (RFC 9110 7.6.1) or carry the relay credential. */
const DROP = new Set([
  'authorization',
  MESH_KEY_HEADER,
  MESH_SOURCE_HEADER,
  MESH_VIA_HEADER,
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface ProxyPath {
  cluster: string;
  /** Path and query to send upstream (`/` at least). */
  upstreamPath: string;
}

export function parseProxyPath(url: string): ProxyPath | null {
  const m = PROXY_PATH.exec(url);
  if (!m) return null;
  let cluster: string;
  try {
    cluster = decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
  return { cluster, upstreamPath: `${m[2] || '/'}${m[3] ?? ''}` };
}

/** Request headers to forward: end-to-end ones only, minus anything the Connection header names. */
export function forwardHeaders(raw: readonly string[]): string[] {
  return endToEndHeaders(raw, DROP);
}

/** Counters of the path proxy (exported on /metrics by the hub proxy plugin). */
export interface PathProxyStats {
  /** Plain requests answered by the upstream, by status class (`1xx`..`5xx`, else `other`). */
  forwarded: Record<string, number>;
  /** Plain requests the relay answered with an error, by its status; `aborted`: failed mid-response. */
  failed: Record<string, number>;
  /** Upgrade requests spliced to the upstream (its answer travels inside the spliced bytes). */
  upgrades: number;
  /** Upgrade requests the relay refused, by status. */
  upgradeFailed: Record<string, number>;
}

export function newPathProxyStats(): PathProxyStats {
  return { forwarded: {}, failed: {}, upgrades: 0, upgradeFailed: {} };
}

const bump = (r: Record<string, number>, k: string | number): void => {
  r[k] = (r[k] ?? 0) + 1;
};

/** `2xx` for 200..299; `other` outside 100..599 (keeps the label set bounded). */
export function statusClass(code: number): string {
  return code >= 100 && code < 600 ? `${Math.floor(code / 100)}xx` : 'other';
}

type Ctx = Pick<RelayContext, 'store' | 'clock' | 'log'> & Partial<Pick<RelayContext, 'metrics' | 'mesh'>>;

/** What the path proxy works with: the relay, the hub's streams and the live-pipe registry. */
export interface PathProxyDeps {
  ctx: Ctx;
  streams: HubStreams;
  pipes: LivePipes;
  stats: PathProxyStats;
  /** A fleet's mesh: a request for an agent another replica holds goes there (relay/fleet/mesh/). */
  mesh?: MeshRouting;
  /** Logs the requests answered 502/503 (hub-failure-log.ts). */
  failures?: HubFailureLog;
}

/** Methods whose request, without a body, is sent again to another agent when its agent went away before answering. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Content-Length is re-sent from the parsed framing (Transfer-Encoding is already hop-by-hop). */
const DROP_REFRAMED = new Set([...DROP, 'content-length']);

/** An allowed proxy request: the key, its cluster, the OPEN text and, for a write the relay left to the API
 * server (impersonating a read-only caller), the refusal the relay would have answered itself. */
interface Authorized {
  key: KeyPrincipal;
  cluster: ClusterRecord;
  target: string;
  delegatedRefusal: string | null;
}

/** The FORBIDDEN message `requireProxy` answers for this use, or null when it allows it. */
function refusalOf(who: Principal, c: ClusterRecord, use: ProxyUse): string | null {
  try {
    requireProxy(who, c, use);
    return null;
  } catch (err) {
    if (isTunnelError(err, 'FORBIDDEN')) return err.message;
    throw err;
  }
}

async function authorize(
  ctx: Ctx,
  req: IncomingMessage,
  cluster: string,
  upgrade: boolean,
): Promise<Authorized> {
  const who = await authenticate(ctx.store, bearer(req.headers), ctx.clock.wallNow());
  const c = await ctx.store.getCluster(cluster);
  const scope = proxyScope(who);
  // A key minted for a cluster that was deleted is refused as an unknown key, even by a later cluster of its name
  // (the deletion revoked it; this holds for a key minted while the deletion ran too).
  if (c !== null && scope !== null && scope.cluster === c.name && !isScopeOf(scope, c)) {
    throw new TunnelError('UNAUTHENTICATED', 'missing, unknown, expired or revoked credential');
  }
  // A cluster the caller may not see answers as a missing one: no group named, no existence confirmed.
  // A key scoped to one cluster's proxy sees that cluster only.
  const visible = c !== null && (canSeeCluster(who, c) || scope?.cluster === c.name);
  if (!c || !visible) throw new TunnelError('NOT_FOUND', `cluster '${cluster}' not found`);
  const use = isReadOnly(req.method, upgrade) ? 'read' : 'write';
  const impersonate = await clusterImpersonates(ctx, c.name);
  // Impersonating, a read-only caller's write reaches the API server as tunnel-relay:viewer; its RBAC decides.
  const refusal = use === 'write' ? refusalOf(who, c, 'write') : null;
  const delegated = impersonate && refusal !== null;
  const key = requireProxy(who, c, delegated ? 'read' : use);
  const target = upstreamTarget(impersonate ? callerIdentity(key, delegated) : null);
  return { key, cluster: c, target, delegatedRefusal: delegated ? refusal : null };
}

/** The agent's refusal of the upstream stream, said in terms of the cluster (what kubectl prints). */
function explainOpenError(err: unknown, cluster: string): unknown {
  const reason = err instanceof Error ? err.message.replace(/^@upstream(\?[^:]*)?: /, '') : '';
  if (err instanceof TunnelError && err.code === 'STREAM_REFUSED') {
    return new TunnelError('STREAM_REFUSED', `agent for cluster ${cluster} refused the stream: ${reason}`);
  }
  if (err instanceof TunnelError && err.code === 'UPSTREAM_FAILED') {
    return new TunnelError(
      'UPSTREAM_FAILED',
      `agent for cluster ${cluster} could not reach its upstream: dial failed: ${reason}`,
    );
  }
  return err;
}

/**
 * A stream to the cluster's default upstream (`first` bytes sent with the open), with the agent's refusal explained; an agent that cannot
 * impersonate a read-only caller's write refuses it, answered as the relay's own FORBIDDEN.
 */
async function openUpstream(streams: HubStreams, allowed: Authorized, first?: Buffer): Promise<MuxStream> {
  const cluster = allowed.cluster.name;
  try {
    return await streams.open(cluster, allowed.target, { first });
  } catch (err) {
    if (allowed.delegatedRefusal !== null && isTunnelError(err, 'STREAM_REFUSED')) {
      const reason = err.message.replace(/^@upstream(\?[^:]*)?: /, '');
      throw new TunnelError(
        'FORBIDDEN',
        `${allowed.delegatedRefusal} (the agent of cluster ${cluster}: ${reason})`,
      );
    }
    throw explainOpenError(err, cluster);
  }
}

/**
 * A stream to the cluster's upstream here, or, when the open fails as another agent could take it (the agent died
 * or went away under it) and another replica of the fleet holds a live agent of the cluster, that replica's hop.
 */
async function openOrHop(
  deps: PathProxyDeps,
  o: { allowed: Authorized; origin: MeshOrigin; req: IncomingMessage; first?: Buffer },
): Promise<{ stream: MuxStream } | { hop: MeshHop }> {
  try {
    return { stream: await openUpstream(deps.streams, o.allowed, o.first) };
  } catch (err) {
    const node = deps.mesh?.node;
    const other = retryable(err) ? await retryHopFor(deps.mesh, o.origin, o.allowed.cluster) : null;
    if (other === null || !node) throw err;
    return { hop: node.hopTo(other, o.req) };
  }
}

/** Request headers for upstream: end-to-end ones, then the body's framing as parsed. */
function upstreamHeaders(req: IncomingMessage, framing: BodyFraming): string[] {
  const headers = withoutClientCredentials(endToEndHeaders(req.rawHeaders, DROP_REFRAMED));
  return [...headers, ...framingHeaders(framing)];
}

/** Answers the error; the status sent, or null when the answer had begun (the response is cut). */
function sendError(
  res: ServerResponse,
  err: unknown,
  cluster: string | null,
  discovery = false,
): number | null {
  const e = asTunnelError(err);
  if (res.headersSent) {
    res.destroy(e);
    return null;
  }
  const status = proxyStatus(e, false);
  const plain = discovery ? discoveryErrorAnswer(status, e.message) : null;
  if (plain !== null) {
    res.writeHead(plain.status, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': Buffer.byteLength(plain.body),
    });
    res.end(plain.body);
    return plain.status;
  }
  const body = JSON.stringify(kubeStatus(e, status, cluster));
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  };
  // The body of a request with ambiguous framing cannot be skipped reliably: no next request.
  if (e.code === 'BAD_FRAMING') headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(body);
  return status;
}

/** Forwards one plain (non-Upgrade) request. */
async function forward(deps: PathProxyDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { ctx, streams, pipes } = deps;
  const origin = meshOriginOf(deps.mesh, req.headers);
  const framing = bodyFraming(req.rawHeaders);
  const p = parseProxyPath(req.url ?? '');
  if (!p) throw new TunnelError('NOT_FOUND', 'no such proxy path');
  const allowed = await authorize(ctx, req, p.cluster, false);
  pipes.hold(allowed.key, res);
  const hop = await reachableHop(deps.mesh, origin, allowed.cluster, req);
  if (hop) return forwardRequest(hop, req, res);
  const headers = [...upstreamHeaders(req, framing), 'connection', 'close'];
  const onAnswer = (status: number) => bump(deps.stats.forwarded, statusClass(status));
  const head = { method: req.method ?? 'GET', path: p.upstreamPath, headers };
  const plain: PlainRequest = {
    req,
    res,
    allowed,
    origin,
    head,
    bodyFollows: framing.kind !== 'none',
    onAnswer,
  };
  const watch = framing.kind === 'none' && isWatchRequest(req.method, p.upstreamPath);
  if (framing.kind === 'none' && !watch) return forwardWithHead(deps, plain);
  const opened = await openOrHop(deps, { allowed, origin, req });
  if ('hop' in opened) return forwardRequest(opened.hop, req, res);
  const { stream } = opened;
  stream.on('error', () => {});
  if (res.destroyed) return void stream.destroy();
  if (watch) {
    return forwardWatch({
      req,
      res,
      path: p.upstreamPath,
      headers,
      first: stream,
      open: () => openUpstream(streams, allowed),
      answerHeaders: forwardHeaders,
      onAnswer,
      whenDraining: (s, onDrain) => streams.whenDraining(s, onDrain),
      onResume: (resourceVersion) =>
        ctx.log.info({ cluster: p.cluster, resourceVersion }, 'watch reopened on a new agent stream'),
    });
  }
  try {
    await exchangeOver(plain, stream);
  } catch (err) {
    await sendAgain(deps, plain, err);
  }
}

/** One plain request on its way: the client's side, where it goes, and the head sent upstream. */
interface PlainRequest {
  req: IncomingMessage;
  res: ServerResponse;
  allowed: Authorized;
  origin: MeshOrigin;
  head: RequestHead;
  bodyFollows: boolean;
  onAnswer(status: number): void;
}

function exchangeOver(r: PlainRequest, transport: Duplex): Promise<void> {
  return exchange({
    req: r.req,
    res: r.res,
    head: r.head,
    transport,
    bodyFollows: r.bodyFollows,
    answerHeaders: forwardHeaders,
    what: 'upstream request',
    onAnswer: r.onAnswer,
  });
}

/**
 * A request without a body: its head, as http.request writes it, travels with the stream open (no round trip to
 * the agent before it leaves). A refused or failed open is answered as the relay's own error, as when the open
 * came first; nothing of the client's request was read but its head, so a hop to another replica still forwards it.
 */
async function forwardWithHead(deps: PathProxyDeps, r: PlainRequest): Promise<void> {
  let hop: MeshHop | null = null;
  const transport = new OpenOnFirstWrite(async (first) => {
    const opened = await openOrHop(deps, { allowed: r.allowed, origin: r.origin, req: r.req, first });
    if ('hop' in opened) {
      hop = opened.hop;
      throw new TunnelError('CLOSED', 'the request goes to another replica');
    }
    opened.stream.on('error', () => {});
    if (!r.res.destroyed) return opened.stream;
    opened.stream.destroy();
    throw new TunnelError('CLOSED', 'the client went away');
  });
  try {
    await exchangeOver(r, transport);
  } catch (err) {
    if (hop) return forwardRequest(hop, r.req, r.res);
    if (r.res.destroyed) return;
    if (transport.openError !== undefined) throw transport.openError;
    await sendAgain(deps, r, err);
  }
}

/**
 * The exchange failed: a safe request with no body whose agent went away before any answer is sent again, to
 * another agent (or replica); anything else is the failure answered.
 */
async function sendAgain(deps: PathProxyDeps, r: PlainRequest, err: unknown): Promise<void> {
  const { req, res } = r;
  if (!isTunnelError(err, 'STREAM_RESET') || res.headersSent || res.destroyed) throw err;
  if (r.bodyFollows || !SAFE_METHODS.has(r.head.method)) throw err;
  const again = await openOrHop(deps, { allowed: r.allowed, origin: r.origin, req });
  if ('hop' in again) return forwardRequest(again.hop, req, res);
  again.stream.on('error', () => {});
  await exchangeOver(r, again.stream);
}

/** Handles an Upgrade request for the proxy path; false when the path is not the proxy's. */
export function handleProxyUpgrade(
  deps: PathProxyDeps,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): boolean {
  const { ctx, pipes, stats } = deps;
  const p = parseProxyPath(req.url ?? '');
  if (!p) return false;
  socket.on('error', () => {});
  (async () => {
    const origin = meshOriginOf(deps.mesh, req.headers);
    const framing = bodyFraming(req.rawHeaders);
    if (framing.kind === 'chunked') {
      // The spliced bytes after the head are not re-framed: a chunked body would reach the upstream raw.
      throw new TunnelError(
        'BAD_FRAMING',
        'an Upgrade request with Transfer-Encoding chunked is not forwarded',
      );
    }
    const allowed = await authorize(ctx, req, p.cluster, true);
    pipes.hold(allowed.key, socket);
    const hop = await reachableHop(deps.mesh, origin, allowed.cluster, req);
    if (hop) return forwardUpgrade(hop, req, { socket, head });
    const hdrs = upstreamHeaders(req, framing);
    const upgrade = req.headers.upgrade ?? '';
    let text = `${req.method ?? 'GET'} ${p.upstreamPath} HTTP/1.1\r\n`;
    for (let i = 0; i + 1 < hdrs.length; i += 2) text += `${hdrs[i]}: ${hdrs[i + 1]}\r\n`;
    text += `connection: Upgrade\r\nupgrade: ${upgrade}\r\n\r\n`;
    // The re-written head (and what followed it) travels with the open: no round trip before it leaves.
    const first = Buffer.concat([Buffer.from(text), head]);
    const opened = await openOrHop(deps, { allowed, origin, req, first });
    if ('hop' in opened) return forwardUpgrade(opened.hop, req, { socket, head });
    const { stream } = opened;
    stream.on('error', () => {});
    if (socket.destroyed) return void stream.destroy();
    stats.upgrades++;
    const session = sessionTarget(p.upstreamPath);
    if (session)
      auditSession({ ctx, req, key: allowed.key, cluster: p.cluster, target: session, socket, stream });
    splice(stream, socket, (e) => new TunnelError('STREAM_RESET', `client: ${e.message}`));
  })().catch((err: unknown) => {
    const e = asTunnelError(err);
    if (e.code === 'UNAUTHENTICATED') ctx.metrics?.authFailures.inc();
    if (e.code === 'INTERNAL') ctx.log.error({ err }, 'proxy upgrade failed');
    const status = proxyStatus(e, false);
    deps.failures?.note(p.cluster, status, e);
    bump(stats.upgradeFailed, status);
    writeErrorResponse(socket, status, e, { body: kubeStatus(e, status, p.cluster) });
  });
  return true;
}

/** Registers the plain-request routes on `app`. */
export function registerPathProxy(app: FastifyInstance, deps: PathProxyDeps): void {
  const { ctx, stats } = deps;
  const onRequest = async (
    request: { raw: IncomingMessage },
    reply: { hijack(): void; raw: ServerResponse },
  ): Promise<void> => {
    reply.hijack();
    const res = reply.raw;
    forward(deps, request.raw, res).catch((err: unknown) => {
      const e = asTunnelError(err);
      const code = e.code;
      bump(stats.failed, res.headersSent ? 'aborted' : proxyStatus(e, false));
      if (code === 'UNAUTHENTICATED') ctx.metrics?.authFailures.inc();
      if (code === 'INTERNAL') ctx.log.error({ err }, 'proxy request failed');
      const path = parseProxyPath(request.raw.url ?? '');
      const discovery = path !== null && isDiscoveryRequest(request.raw.method, path.upstreamPath);
      const sent = sendError(res, err, path?.cluster ?? null, discovery);
      if (sent !== null) deps.failures?.note(path?.cluster ?? null, sent, e);
    });
  };
  for (const url of ['/api/v1/clusters/:name/proxy', '/api/v1/clusters/:name/proxy/*']) {
    app.route({
      method: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
      url,
      onRequest,
      handler: async () => undefined,
    });
  }
}
