/**
 * The paths to one peer, and the one Endpoint its WireGuard peer sees (as magicsock's per-peer endpoint):
 * WireGuard sends every datagram for the peer here and never learns an address, so its session (keys,
 * counters, replay window) carries on when the path under it changes. Datagrams from the peer, on any of
 * its paths, are handed to the device as coming from this same object.
 *
 * One path per kind. The current path is the one of the kind the peer's latest authenticated datagram
 * arrived on (arrivedOn), else the first one added: a peer that talks over the relay is answered there, a
 * stock WireGuard peer that reaches the endpoint's UDP port (no relay connection) is answered over UDP.
 * Choosing among several kinds by probes (direct while its probes answer, else relayed) belongs in
 * #select().
 */
import type { Endpoint } from '../wireguard/peer-host.js';
import type { Path, PathKind } from './path.js';

export interface PeerPathsOptions {
  publicKey: Buffer;
  /** The peer's tunnel address (u32). */
  address: number;
  /** The current path changed (its MTU may differ): called after the change. */
  onPathChange(peer: PeerPaths): void;
}

export class PeerPaths implements Endpoint {
  /** `peer:<base64 key>`: the name the device logs and rate-limits handshakes by. */
  readonly key: string;
  readonly publicKey: Buffer;
  readonly address: number;
  readonly #paths: Path[] = [];
  readonly #onPathChange: (peer: PeerPaths) => void;
  #current: Path | undefined;
  #arrivedOn: PathKind | null = null;

  constructor(o: PeerPathsOptions) {
    this.publicKey = o.publicKey;
    this.address = o.address;
    this.key = `peer:${o.publicKey.toString('base64')}`;
    this.#onPathChange = o.onPathChange;
  }

  /** The path datagrams take now; undefined while the peer has none. */
  get path(): Path | undefined {
    return this.#current;
  }

  get all(): readonly Path[] {
    return this.#paths;
  }

  /** The peer's path of that kind. */
  get(kind: PathKind): Path | undefined {
    return this.#paths.find((p) => p.kind === kind);
  }

  /** A datagram from the peer authenticated on its path of `kind`. */
  arrivedOn(kind: PathKind): void {
    if (this.#arrivedOn === kind) return;
    this.#arrivedOn = kind;
    this.#select();
  }

  /** Adds a path, in place of the peer's path of the same kind. */
  add(path: Path): void {
    const i = this.#paths.findIndex((p) => p.kind === path.kind);
    if (i < 0) this.#paths.push(path);
    else this.#paths[i] = path;
    this.#select();
  }

  /** Sends one datagram on the current path; false when there is none or it dropped the datagram. */
  send(datagram: Buffer): boolean {
    return this.#current?.send(datagram) === true;
  }

  #select(): void {
    const next = (this.#arrivedOn !== null ? this.get(this.#arrivedOn) : undefined) ?? this.#paths[0];
    if (next === this.#current) return;
    this.#current = next;
    this.#onPathChange(this);
  }
}
