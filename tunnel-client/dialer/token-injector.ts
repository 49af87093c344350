/**
 * Credential injection for the default upstream (`@upstream` streams only; CONNECT streams are
 * never touched): the agent reads the HTTP/1.1 request the hub's path proxy sends, replaces its
 * Authorization with `Bearer <token>` (re-read from the token file for every request, so a rotated
 * service-account token is picked up), drops client-sent `Impersonate-*` headers (a proxy user must not
 * borrow the agent's impersonation rights), adds `Impersonate-User` / `Impersonate-Group` for the caller the
 * hub named in the stream's OPEN text (shared/net/mux/upstream-identity.ts; none: the agent's own identity), and
 * forwards it over the already dialed upstream socket.
 * Upgrade requests get the same header treatment, then the bytes are spliced both ways. A request body
 * is framed upstream exactly as it arrived (shared/kit/http/body-framing.ts): a GET with a chunked body
 * stays one request with that body, never a request followed by the body parsed as another one.
 *
 * Enabled by TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE, or in a pod whose API server is the upstream (upstream-trust.ts).
 */
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { type BodyFraming, bodyFraming, framingHeaders } from '../../shared/kit/http/body-framing.js';
import type { CallerIdentity } from '../../shared/net/mux/upstream-identity.js';
import { splice } from '../../shared/net/tunnel-streams/splice.js';

const HOP = new Set([
  'authorization',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Content-Length is re-sent from the parsed framing (Transfer-Encoding is hop-by-hop already). */
const REFRAMED: ReadonlySet<string> = new Set(['content-length']);

const NO_OMIT: ReadonlySet<string> = new Set();

/**
 * The request's end-to-end headers minus credentials, impersonation and `omit`, plus the agent's token and the
 * caller's impersonation headers (`identity` null: none, the agent acts as itself).
 */
export function injectedHeaders(
  raw: readonly string[],
  token: string,
  identity: CallerIdentity | null = null,
  omit: ReadonlySet<string> = NO_OMIT,
): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (HOP.has(k) || omit.has(k) || k.startsWith('impersonate-')) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  out.push('authorization', `Bearer ${token}`);
  if (identity === null) return out;
  out.push('impersonate-user', identity.user);
  for (const g of identity.groups) out.push('impersonate-group', g);
  return out;
}

/** What serveWithToken adds to each request: the token file (re-read per request) and the caller. */
export interface UpstreamCredential {
  tokenFile: string;
  identity: CallerIdentity | null;
}

export function readToken(file: string): string {
  try {
    const t = readFileSync(file, 'utf8').trim();
    if (t.length === 0) throw new Error('empty');
    return t;
  } catch (err) {
    const code = (err as { code?: string }).code ?? (err as Error).message;
    throw new TunnelError('BAD_CONFIG', `TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: cannot read '${file}' (${code})`);
  }
}

/**
 * Serves the one request (or upgrade) arriving on `stream` against `upstream`, with the token from
 * `tokenFile`. The hub's path proxy sends exactly one request per stream (`Connection: close`).
 */
export function serveWithToken(stream: Duplex, upstream: Socket, credential: UpstreamCredential): void {
  const { tokenFile, identity } = credential;
  const fail = (e: Error): void => {
    stream.destroy(new TunnelError('UPSTREAM_FAILED', `upstream: ${e.message}`));
    upstream.destroy();
  };
  upstream.on('error', fail);
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    let token: string;
    try {
      token = readToken(tokenFile);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify((err as TunnelError).toJSON()));
      return;
    }
    let framing: BodyFraming;
    try {
      framing = bodyFraming(req.rawHeaders);
    } catch (err) {
      if (!isTunnelError(err)) throw err;
      res.writeHead(400, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify(err.toJSON()));
      return;
    }
    const headers = [
      ...injectedHeaders(req.rawHeaders, token, identity, REFRAMED),
      ...framingHeaders(framing),
    ];
    const up = http.request({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: [...headers, 'connection', 'close'],
      setHost: false,
      createConnection: () => upstream,
    });
    up.on('error', fail);
    up.on('response', (ures) => {
      const out: string[] = [];
      for (let i = 0; i + 1 < ures.rawHeaders.length; i += 2) {
        const k = ures.rawHeaders[i]!.toLowerCase();
        if (k === 'authorization' || !HOP.has(k)) out.push(ures.rawHeaders[i]!, ures.rawHeaders[i + 1]!);
      }
      res.writeHead(ures.statusCode ?? 502, ures.statusMessage, out);
      ures.pipe(res);
    });
    if (framing.kind === 'none') up.end();
    else req.pipe(up);
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    let token: string;
    try {
      token = readToken(tokenFile);
    } catch (err) {
      client.destroy(err as Error);
      upstream.destroy();
      return;
    }
    const hdrs = injectedHeaders(req.rawHeaders, token, identity);
    let text = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\n`;
    for (let i = 0; i + 1 < hdrs.length; i += 2) text += `${hdrs[i]}: ${hdrs[i + 1]}\r\n`;
    text += `connection: Upgrade\r\nupgrade: ${req.headers.upgrade ?? ''}\r\n\r\n`;
    upstream.off('error', fail);
    upstream.write(text);
    if (head.length > 0) upstream.write(head);
    splice(client, upstream, (e) => new TunnelError('UPSTREAM_FAILED', `upstream: ${e.message}`));
  });
  server.on('clientError', (_err, s) => s.destroy());
  server.emit('connection', stream);
}
