/**
 * How the hub node reaches a peer: a WireGuard Endpoint names a path as `<scheme>:<address>`. Today the
 * only scheme is `derp:<base64 key>` (through the DERP server's in-process client); a direct UDP path
 * (`udp:HOST:PORT`) plugs in later as another PathTransport without touching the hub node.
 */
import type { Endpoint } from '../../shared/wireguard/device.js';

export interface PathTransport {
  /** Sends one WireGuard datagram; false when the path dropped it (not connected, backed up). */
  send(datagram: Buffer, endpoint: Endpoint): boolean;
}

export interface DerpEndpoint extends Endpoint {
  readonly scheme: 'derp';
  /** The peer's 32-byte key on the relay. */
  readonly derpKey: Buffer;
}

export function derpEndpoint(key: Buffer): DerpEndpoint {
  return { key: `derp:${key.toString('base64')}`, scheme: 'derp', derpKey: key };
}

export function endpointScheme(e: Endpoint): string {
  const s = (e as Partial<DerpEndpoint>).scheme;
  if (s !== undefined) return s;
  const i = e.key.indexOf(':');
  return i < 0 ? '' : e.key.slice(0, i);
}

/** Path transports by scheme. Unknown schemes fail the send (counted by the device as send-failed). */
export class PathTable {
  readonly #byScheme = new Map<string, PathTransport>();
  /** Datagrams whose endpoint had no transport, or whose transport refused them. */
  failed = 0;

  set(scheme: string, t: PathTransport): void {
    this.#byScheme.set(scheme, t);
  }

  send(datagram: Buffer, endpoint: Endpoint): boolean {
    const t = this.#byScheme.get(endpointScheme(endpoint));
    if (t?.send(datagram, endpoint)) return true;
    this.failed++;
    return false;
  }
}
