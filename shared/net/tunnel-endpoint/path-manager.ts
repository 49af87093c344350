/**
 * The paths to each peer of a tunnel endpoint, found by the peer's key or tunnel address. An entry
 * (peer-paths.ts) exists for each peer the endpoint's device holds: the device's maxPeers caps both maps.
 */
import { keyToBase64 } from '../../keys.js';
import { emptyPathBytes, type PathBytes } from './path.js';
import { PeerPaths, type PeerPathsOptions } from './peer-paths.js';

export interface PathManagerOptions extends Pick<PeerPathsOptions, 'onAuthenticated'> {
  /** A peer's current path changed (the endpoint adjusts its stream link's MTU). */
  onPathChange(peer: PeerPaths): void;
}

export class PathManager {
  /** Bytes sent and received on each kind of path, over every peer (the entries add to it). */
  readonly bytes: PathBytes = emptyPathBytes();
  readonly #onPathChange: (peer: PeerPaths) => void;
  readonly #onAuthenticated: PeerPathsOptions['onAuthenticated'];
  readonly #byKey = new Map<string, PeerPaths>();
  readonly #byAddress = new Map<number, PeerPaths>();

  constructor(o: PathManagerOptions) {
    this.#onPathChange = o.onPathChange;
    this.#onAuthenticated = o.onAuthenticated;
  }

  get size(): number {
    return this.#byKey.size;
  }

  /** A new entry for a peer, not yet held: `hold()` it once the device accepted the peer. */
  create(publicKey: Buffer, address: number): PeerPaths {
    return new PeerPaths({
      publicKey,
      address,
      bytes: this.bytes,
      onPathChange: (p) => this.#changed(p),
      onAuthenticated: this.#onAuthenticated,
    });
  }

  /** Holds `peer` (replacing an entry with the same key or address). */
  hold(peer: PeerPaths): void {
    this.remove(peer.publicKey);
    this.#byKey.set(keyToBase64(peer.publicKey), peer);
    this.#byAddress.set(peer.address, peer);
  }

  get(publicKey: string): PeerPaths | undefined {
    return this.#byKey.get(publicKey);
  }

  /** The peer at a tunnel address. */
  forAddress(address: number): PeerPaths | undefined {
    return this.#byAddress.get(address);
  }

  remove(publicKey: Buffer): boolean {
    const id = keyToBase64(publicKey);
    const peer = this.#byKey.get(id);
    if (!peer) return false;
    this.#byKey.delete(id);
    if (this.#byAddress.get(peer.address) === peer) this.#byAddress.delete(peer.address);
    return true;
  }

  #changed(peer: PeerPaths): void {
    if (this.#byKey.get(keyToBase64(peer.publicKey)) === peer) this.#onPathChange(peer);
  }
}
