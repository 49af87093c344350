/**
 * The install URL of a one-time link and the one line that applies it. With a relay certificate
 * clients cannot verify through a public CA (a CA pin is advertised), kubectl cannot fetch the URL
 * itself, so the line is curl pinned to the relay's public key (`--pinnedpubkey` is checked even with
 * `--insecure`, so the PSK only goes to the relay), piped into `kubectl apply -f -`. Without a pin the
 * relay's certificate is publicly trusted and the line is plain `kubectl apply -f URL`.
 */
import { createHash, X509Certificate } from 'node:crypto';

export function installUrl(publicUrl: string, token: string): string {
  return `${publicUrl}/api/v1/install/${token}`;
}

/** curl's `sha256//BASE64` pin of the public key in the first certificate of `pem`. */
export function pinnedPublicKey(pem: string): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256//${createHash('sha256').update(spki).digest('base64')}`;
}

export function installCommand(url: string, trust: { caPin: string | null; caPem: string | null }): string {
  if (trust.caPin === null || trust.caPem === null) return `kubectl apply -f ${url}`;
  return `curl -fsS --insecure --pinnedpubkey '${pinnedPublicKey(trust.caPem)}' ${url} | kubectl apply -f -`;
}
