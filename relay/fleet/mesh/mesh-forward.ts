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
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { TunnelError } from '../../../shared/errors.js';
import { bodyFraming, framingHeaders } from '../../../shared/kit/http/body-framing.js';
import { splice } from '../../../shared/net/tunnel-streams/splice.js';
import { endToEndHeaders } from '../../ops/http/end-to-end-headers.js';
import { exchange } from '../../ops/http/http-exchange.js';
import { MESH_KEY_HEADER, MESH_VIA_HEADER } from './mesh-auth.js';
import { MESH_SOURCE_HEADER } from './mesh-source.js';

export type ForwardKind = 'connect' | 'upgrade' | 'request';

/** One hop over the mesh: how to reach the replica, and the mesh headers (key, client address) to send it. */
export interface MeshHop {
  /** A TLS connection to the replica, its certificate checked against the fleet pin. */
  dial(): Promise<TLSSocket>;
  /** Flat name/value list (mesh-source.ts meshHeaders). */
  headers: readonly string[];
  stats: { forwarded: Record<ForwardKind, number>; open: number };
}

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
  MESH_SOURCE_HEADER,
  MESH_VIA_HEADER,
]);

/** An answer's Content-Length is passed on as the replica sent it. */
const ANSWER_KEEP = new Set(['content-length']);

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

function track(hop: MeshHop, kind: ForwardKind, peer: Duplex): void {
  hop.stats.forwarded[kind]++;
  hop.stats.open++;
  peer.once('close', () => {
    hop.stats.open--;
  });
}

async function forwardRaw(hop: MeshHop, kind: ForwardKind, text: string, o: RawSide): Promise<void> {
  const peer = await hop.dial();
  peer.on('error', () => {});
  if (o.socket.destroyed) return void peer.destroy();
  track(hop, kind, peer);
  peer.write(text);
  if (o.head.length > 0) peer.write(o.head);
  splice(peer, o.socket, (e) => new TunnelError('STREAM_RESET', `client: ${e.message}`));
}

interface RawSide {
  socket: Duplex;
  head: Buffer;
}

/** Forwards a CONNECT (its Proxy-Authorization kept) over `hop`. */
export function forwardConnect(hop: MeshHop, req: IncomingMessage, o: RawSide): Promise<void> {
  const target = req.url ?? '';
  const auth = req.headers['proxy-authorization'];
  const headers = ['host', target, ...(typeof auth === 'string' ? ['proxy-authorization', auth] : [])];
  headers.push(...hop.headers);
  return forwardRaw(hop, 'connect', headText(`CONNECT ${target} HTTP/1.1`, headers), o);
}

/** Forwards an Upgrade request (its Authorization kept) over `hop`. */
export function forwardUpgrade(hop: MeshHop, req: IncomingMessage, o: RawSide): Promise<void> {
  const lengthHeader = req.headers['content-length'];
  const headers = [
    ...endToEndHeaders(req.rawHeaders, HOP_BY_HOP),
    ...(lengthHeader !== undefined ? ['content-length', lengthHeader] : []),
    'connection',
    'Upgrade',
    'upgrade',
    req.headers.upgrade ?? '',
    ...hop.headers,
  ];
  return forwardRaw(
    hop,
    'upgrade',
    headText(`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`, headers),
    o,
  );
}

/** Forwards a plain request over `hop` and streams its answer back; resolves when it is done. */
export async function forwardRequest(hop: MeshHop, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const framing = bodyFraming(req.rawHeaders);
  const peer = await hop.dial();
  peer.on('error', () => {});
  if (res.destroyed) return void peer.destroy();
  track(hop, 'request', peer);
  const headers = [
    ...endToEndHeaders(req.rawHeaders, HOP_BY_HOP),
    ...framingHeaders(framing),
    'connection',
    'close',
    ...hop.headers,
  ];
  await exchange({
    req,
    res,
    head: { method: req.method ?? 'GET', path: req.url ?? '/', headers: headerObject(headers) },
    transport: peer,
    bodyFollows: framing.kind !== 'none',
    answerHeaders: (raw) => endToEndHeaders(raw, HOP_BY_HOP, ANSWER_KEEP),
    what: 'mesh request',
  });
}
