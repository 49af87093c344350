/**
 * The install URL of a one-time link and the one line that applies it. The URL is a bearer secret (whoever fetches
 * it first gets the PSK), so it never appears in a process's argv, where any local user reads it from
 * /proc/PID/cmdline: a shell builtin (`echo`, which starts no process) writes it as curl's config on curl's stdin
 * (`-K -`), and curl's output goes to `kubectl apply -f -`. With a relay certificate clients verify by pin (a CA
 * pin is advertised), curl is pinned to the relay's public key (`--pinnedpubkey` is checked even with
 * `--insecure`, so the PSK only goes to the relay); otherwise curl verifies the publicly trusted certificate.
 * When the relay refuses the link (curl exits 22: used, expired, replaced), the line says on stderr which command
 * makes a new one before kubectl reports that it got no objects. The line is POSIX sh (also bash and zsh).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { shellQuote } from '../../../shared/kit/cli/shell-quote.js';

/** curl's exit status for an HTTP answer >= 400 under `--fail`. */
const CURL_HTTP_ERROR = 22;

export function installUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/api/v1/install/${token}`;
}

/** curl's `sha256//BASE64` pin of the public key in the first certificate of `pem`. */
export function pinnedPublicKey(pem: string): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256//${createHash('sha256').update(spki).digest('base64')}`;
}

export interface InstallCommandInput {
  url: string;
  /** The cluster the link belongs to (named in the hint printed when the relay refuses the link). */
  cluster: string;
  caPin: string | null;
  caPem: string | null;
}

/** The `url = "..."` line of a curl config file (inside double quotes curl reads `\\` and `\"` as escapes). */
function curlConfigUrl(url: string): string {
  return `url = "${url.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

export function installCommand(o: InstallCommandInput): string {
  const pin =
    o.caPin === null || o.caPem === null
      ? ''
      : ` --insecure --pinnedpubkey ${shellQuote(pinnedPublicKey(o.caPem))}`;
  const fetch = `echo ${shellQuote(curlConfigUrl(o.url))} | curl -fsS${pin} -K -`;
  const hint = `install link refused (already used, expired or replaced): run tunnel-relay cluster rotate-psk ${o.cluster} for a new one`;
  const onRefusal = `{ [ $? -eq ${CURL_HTTP_ERROR} ] && echo ${shellQuote(hint)} >&2; }`;
  return `{ ${fetch} || ${onRefusal}; } | kubectl apply -f -`;
}
