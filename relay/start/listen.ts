/**
 * Binding the relay's port once everything is registered, and the start's log lines: where it listens, and the
 * warnings an operator acts on (too few open files for the connection cap, a certificate that does not name the
 * public URL's host).
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { RelayConfig } from '../ops/config/config.js';
import { type HttpLimits, openFilesWarning } from '../ops/config/http-limits.js';
import { type HeldPort, listenBindError } from '../ops/port-hold.js';
import { certCovers, type TlsTrust } from './tls-trust.js';

function urlHost(host: string): string {
  const h = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return h.includes(':') ? `[${h}]` : h;
}

function errnoOf(err: unknown): string {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : 'error';
}

/** Lets go of the held port and listens on it; the bound URL, or BAD_CONFIG naming the address. */
export async function listenOn(app: FastifyInstance, config: RelayConfig, held: HeldPort): Promise<string> {
  await held.release();
  try {
    await app.listen({ host: config.listen.host, port: config.listen.port });
  } catch (err) {
    await app.close();
    throw listenBindError(config.listen.host, config.listen.port, errnoOf(err));
  }
  const addr = app.server.address() as AddressInfo;
  return `${config.plainHttp ? 'http' : 'https'}://${urlHost(config.listen.host)}:${addr.port}`;
}

export interface StartWarnings {
  log: Logger;
  publicUrl: string;
  trust: TlsTrust;
  limits: HttpLimits;
  openFileLimit: number | null;
}

/** Warnings about the open-file limit and certificates that do not name the public URL's host. */
export function warnAtStart(w: StartWarnings): void {
  const overFiles = openFilesWarning(w.limits.maxConnections, w.openFileLimit);
  if (overFiles !== null)
    w.log.warn({ maxConnections: w.limits.maxConnections, openFileLimit: w.openFileLimit }, overFiles);
  if (w.trust.tls && !certCovers(w.trust.tls.certDer, w.publicUrl)) {
    w.log.warn(
      { publicUrl: w.publicUrl },
      'the TLS certificate does not name the public URL host: agents that check names will refuse it; ' +
        'remove <data-dir>/tls to regenerate the self-signed one, or pass --tls-cert/--tls-key',
    );
  }
  if (w.trust.publicCa && !certCovers(w.trust.publicCa.firstDer, w.publicUrl)) {
    // Agents compare --ca-pin with the certificate the terminator presents (no chain walk).
    w.log.warn(
      { publicUrl: w.publicUrl },
      'the first certificate of --public-ca-file does not name the public URL host, so it is not the one the ' +
        'terminator serves: join commands carry no --ca-pin; join agents with --ca-file (this file) instead',
    );
  }
}
