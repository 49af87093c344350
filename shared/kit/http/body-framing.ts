/**
 * How a request's body is framed (RFC 9112 6), read from its raw headers, so the hub's path proxy
 * and the agent's token injector can frame it the same way upstream: `chunked` stays chunked, a length stays that one length, no
 * framing means no body. Anything two parsers could read differently is refused with BAD_FRAMING
 * (request smuggling: one client request must never become two upstream requests):
 *   Content-Length together with Transfer-Encoding (of any value, empty included),
 *   more than one Content-Length (several headers, or a list in one),
 *   a Content-Length that is not 1..15 decimal digits,
 *   more than one Transfer-Encoding header, or one whose value is not exactly `chunked`.
 * Node's parser refuses most of these before a handler sees the request (at the relay,
 * relay/ops/http-client-error.ts answers them with the same code); this check also covers what it lets through (`gzip, chunked`,
 * an empty Transfer-Encoding next to a Content-Length).
 */
import { TunnelError } from '../../errors.js';

export type BodyFraming = { kind: 'none' } | { kind: 'chunked' } | { kind: 'length'; length: number };

/** Digits of a Content-Length: 15 keep it an exact integer (and over any body the relay carries). */
const LENGTH = /^[0-9]{1,15}$/;
/** How much of a refused header value an error message quotes. */
const QUOTE_MAX = 64;

const quote = (v: string): string => JSON.stringify(v.length > QUOTE_MAX ? `${v.slice(0, QUOTE_MAX)}...` : v);

function refuse(message: string): never {
  throw new TunnelError('BAD_FRAMING', message);
}

/** The framing of a request with these raw headers (name, value, name, value...); throws BAD_FRAMING. */
export function bodyFraming(rawHeaders: readonly string[]): BodyFraming {
  const lengths: string[] = [];
  const codings: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (name === 'content-length') lengths.push(rawHeaders[i + 1]!.trim());
    else if (name === 'transfer-encoding') codings.push(rawHeaders[i + 1]!.trim());
  }
  if (lengths.length > 0 && codings.length > 0) {
    refuse('Content-Length together with Transfer-Encoding: send one of them');
  }
  if (codings.length > 1) refuse(`${codings.length} Transfer-Encoding headers: send one, "chunked"`);
  if (codings.length === 1) {
    if (codings[0]!.toLowerCase() !== 'chunked') {
      refuse(`Transfer-Encoding ${quote(codings[0]!)} is not supported: only "chunked"`);
    }
    return { kind: 'chunked' };
  }
  if (lengths.length > 1) refuse(`${lengths.length} Content-Length headers: send one`);
  if (lengths.length === 1) {
    if (!LENGTH.test(lengths[0]!)) {
      refuse(`Content-Length ${quote(lengths[0]!)} is not one decimal length (at most 15 digits)`);
    }
    return { kind: 'length', length: Number(lengths[0]) };
  }
  return { kind: 'none' };
}

/** The framing headers to send upstream for `framing` (name, value pairs; none for no body). */
export function framingHeaders(framing: BodyFraming): string[] {
  if (framing.kind === 'chunked') return ['transfer-encoding', 'chunked'];
  if (framing.kind === 'length') return ['content-length', String(framing.length)];
  return [];
}
