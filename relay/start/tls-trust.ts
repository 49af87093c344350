/**
 * The relay's TLS identity and the trust it tells clients about: its own certificate (given with --tls-cert, or
 * self-signed in the data dir), or with plain-http the --public-ca-file certificate(s) of the terminator.
 */
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import type { OnModeFixed } from '../../shared/kit/secret-file.js';
import type { RelayConfig } from '../ops/config/config.js';
import { type Family, gaugeFamily } from '../ops/metrics.js';
import { ensureDataDir, loadOrCreateTls, loadPublicCa, type PublicCa, type TlsIdentity } from './identity.js';

export interface TlsTrust {
  /** Null with plain-http: clients see the terminator's certificate. */
  tls: TlsIdentity | null;
  /** Pin and PEM clients are told to trust; null when none (plain-http without --public-ca-file). */
  pin: string | null;
  pem: string | null;
  publicCa: PublicCa | null;
}

/** True if the certificate's SANs cover the URL's host name or address. */
export function certCovers(certDer: Buffer, url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const x = new X509Certificate(certDer);
  return (isIP(host) ? x.checkIP(host) : x.checkHost(host)) !== undefined;
}

/** File-system failures while preparing the data dir become BAD_CONFIG naming the key and the errno. */
export function onDisk<T>(key: string, path: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (isTunnelError(err)) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new TunnelError('BAD_CONFIG', `${key}: cannot prepare ${path} (${code})`);
  }
}

/** The certificate (created on first start when none is given) and the trust advertised. */
export function loadTlsTrust(config: RelayConfig, now: number, onModeFixed: OnModeFixed): TlsTrust {
  const publicCa = config.publicCaFile ? loadPublicCa(config.publicCaFile) : null;
  const tls = onDisk('data-dir', config.dataDir, () => {
    if (config.plainHttp) return null;
    // A given --tls-cert/--tls-key is read before the data dir is made.
    if (!(config.tlsCert && config.tlsKey)) ensureDataDir(config.dataDir);
    return loadOrCreateTls(config, now, onModeFixed);
  });
  if (tls) return { tls, pin: tls.caPin, pem: tls.certPem, publicCa };
  // Agents compare --ca-pin with the certificate the server presents (no chain walk), so a pin of
  // --public-ca-file is only printed when its first certificate is the one the terminator serves (it names the
  // public host). Otherwise join commands carry no pin and agents trust the CA through --ca-file or the system
  // store; kubeconfigs carry the whole file either way (kubectl validates the chain).
  const servedByTerminator =
    publicCa !== null && config.publicUrl !== null && certCovers(publicCa.firstDer, config.publicUrl);
  return { tls: null, pin: servedByTerminator ? publicCa.pin : null, pem: publicCa?.pem ?? null, publicCa };
}

/**
 * `tunnel_relay_tls_certificate_expiry_timestamp_seconds`: the notAfter of the certificate the relay serves, in
 * Unix seconds (none with plain-http: the terminator's certificate is its operator's to watch).
 */
export function certificateExpiryFamilies(trust: TlsTrust): Family[] {
  if (!trust.tls) return [];
  const notAfter = Date.parse(new X509Certificate(trust.tls.certPem).validTo) / 1000;
  return [
    gaugeFamily(
      'tunnel_relay_tls_certificate_expiry_timestamp_seconds',
      'When the TLS certificate the relay serves expires (its notAfter), in Unix seconds.',
      notAfter,
    ),
  ];
}
