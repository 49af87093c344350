/**
 * Request URLs as the log shows them: the value of every secret-bearing query parameter is replaced by
 * REDACTED, and secret-shaped strings anywhere else are cut (redactSecrets). A parameter is recognised
 * by its name as the query parser sees it (Fastify's fast-querystring: split on `&`, `+` is a space,
 * percent escapes decoded), compared without case or surrounding spaces, so `%74oken`, `T%4fKEN` and
 * `+token` are all `token`. A name with a malformed escape is decoded escape by escape and never throws.
 */
import { redactSecrets } from './secrets.js';

/** Query parameters whose values are secrets (lower case): bearer tokens and every secret field name. */
export const SECRET_QUERY_PARAMS: ReadonlySet<string> = new Set([
  'token',
  'access_token',
  'psk',
  'agentcredential',
  'presharedkey',
  'privatekey',
  'adminkey',
  'accesskey',
]);

const ESCAPE = /%([0-9a-fA-F]{2})/g;

/** `raw` decoded as a query parser would (`+` is a space); a malformed escape sequence is kept as is. */
export function decodeQueryName(raw: string): string {
  const spaced = raw.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced.replace(ESCAPE, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }
}

export function isSecretQueryParam(rawName: string): boolean {
  return SECRET_QUERY_PARAMS.has(decodeQueryName(rawName).trim().toLowerCase());
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0 || !isSecretQueryParam(pair.slice(0, eq))) return pair;
      return `${pair.slice(0, eq)}=REDACTED`;
    })
    .join('&');
}

/** The URL with every secret-bearing query parameter's value replaced by REDACTED. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const redacted = q < 0 ? url : `${url.slice(0, q + 1)}${redactQuery(url.slice(q + 1))}`;
  return redactSecrets(redacted);
}
