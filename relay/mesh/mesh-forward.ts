/**
 * Forwarding one hub request to the replica that holds the agent's session (one hop over the mesh):
 *   CONNECT and Upgrade  the request head is written again onto a pinned TLS connection to that replica, with the
 *                        caller's credential and the mesh key, then the bytes are spliced both ways: the replica's
 *                        answer (200, 101, or its error) reaches the client unchanged.
 *   plain requests       re-sent with node's HTTP client over such a connection (body framed as it arrived), the
 *                        answer streamed back.
 * The other replica authenticates the caller again and serves the request itself. A replica that cannot be
 * reached fails the request with MESH_UNREACHABLE (502) naming the cluster, before any byte reached the client.
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { TunnelError } from '../../shared/errors.js';
import { bodyFraming, framingHeaders } from '../../shared/http/body-framing.js';
import { splice } from '../../shared/tunnel-streams/splice.js';
import { exchange } from '../proxy/http-exchange.js';
import type { AgentLocation } from '../store/postgres-mesh.js';
import { MESH_KEY_HEADER } from './mesh-auth.js';
import type { ForwardKind, MeshNode } from './mesh-node.js';

/** Hop-by-hop headers (RFC 9110 7.6.1), re-made for the mesh hop; the caller's credentials are kept. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  MESH_KEY_HEADER,
]);

/** End-to-end headers of `raw` (flat name/value list), minus those its Connection header names. */
export function endToEnd(raw: readonly string[], keep: ReadonlySet<string> = new Set()): string[] {
  const named = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') {
      for (const t of raw[i + 1]!.split(',')) named.add(t.trim().toLowerCase());
    }
  }
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (!keep.has(k) && (HOP_BY_HOP.has(k) || named.has(k))) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/** A flat name/value list as Node's header object (a repeated name becomes a list, in order). */
export function headerObject(flat: readonly string[]): OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i]!.toLowerCase();
    const value = flat[i + 1]!;
    const seen = out[name];
    out[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return out;
}

function headText(line: string, headers: readonly string[]): string {
  let text = `${line}\r\n`;
  for (let i = 0; i + 1 < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return `${text}\r\n`;
}

function track(node: MeshNode, kind: ForwardKind, peer: Duplex): void {
  node.stats.forwarded[kind]++;
  node.stats.open++;
  peer.once('close', () => {
    node.stats.open--;
  });
}

async function forwardRaw(
  node: MeshNode,
  l: AgentLocation,
  kind: ForwardKind,
  text: string,
  o: RawSide,
): Promise<void> {
  const peer = await node.dial(l);
  peer.on('error', () => {});
  if (o.socket.destroyed) return void peer.destroy();
  track(node, kind, peer);
  peer.write(text);
  if (o.head.length > 0) peer.write(o.head);
  splice(peer, o.socket, (e) => new TunnelError('STREAM_RESET', `client: ${e.message}`));
}

interface RawSide {
  socket: Duplex;
  head: Buffer;
}

/** Forwards a CONNECT (its Proxy-Authorization kept) to the replica at `l`. */
export function forwardConnect(
  node: MeshNode,
  l: AgentLocation,
  req: IncomingMessage,
  o: RawSide,
): Promise<void> {
  const target = req.url ?? '';
  const auth = req.headers['proxy-authorization'];
  const headers = ['host', target, ...(typeof auth === 'string' ? ['proxy-authorization', auth] : [])];
  headers.push(MESH_KEY_HEADER, node.headerValue());
  return forwardRaw(node, l, 'connect', headText(`CONNECT ${target} HTTP/1.1`, headers), o);
}

/** Forwards an Upgrade request (its Authorization kept) to the replica at `l`. */
export function forwardUpgrade(
  node: MeshNode,
  l: AgentLocation,
  req: IncomingMessage,
  o: RawSide,
): Promise<void> {
  const lengthHeader = req.headers['content-length'];
  const headers = [
    ...endToEnd(req.rawHeaders),
    ...(lengthHeader !== undefined ? ['content-length', lengthHeader] : []),
    'connection',
    'Upgrade',
    'upgrade',
    req.headers.upgrade ?? '',
    MESH_KEY_HEADER,
    node.headerValue(),
  ];
  return forwardRaw(
    node,
    l,
    'upgrade',
    headText(`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`, headers),
    o,
  );
}

/** Forwards a plain request to the replica at `l` and streams its answer back; resolves when it is done. */
export async function forwardRequest(
  node: MeshNode,
  l: AgentLocation,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const framing = bodyFraming(req.rawHeaders);
  const peer = await node.dial(l);
  peer.on('error', () => {});
  if (res.destroyed) return void peer.destroy();
  track(node, 'request', peer);
  const headers = [
    ...endToEnd(req.rawHeaders),
    ...framingHeaders(framing),
    'connection',
    'close',
    MESH_KEY_HEADER,
    node.headerValue(),
  ];
  const upstream = http.request({
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    headers: headerObject(headers),
    setHost: false,
    createConnection: () => peer,
  });
  await exchange({
    req,
    res,
    upstream,
    transport: peer,
    bodyFollows: framing.kind !== 'none',
    answerHeaders: (raw) => endToEnd(raw, new Set(['content-length'])),
    what: 'mesh request',
  });
}
