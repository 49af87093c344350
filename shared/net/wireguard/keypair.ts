/**
 * Transport keypairs and the previous/current/next slots (reference §8).
 * Initiator on derive: previous = next ?? current; current = new.
 * Responder on derive: next = new; previous = none (current stays until `next` is confirmed).
 * First packet received under `next`: previous = current; current = next.
 */
import { ReplayFilter } from './replay.js';

export class Keypair {
  /** Next counter to send (also the nonce). A number: exact up to 2^53, far beyond RekeyAfterMessages in practice. */
  sendCounter = 0;
  readonly replay = new ReplayFilter();

  constructor(
    readonly sendKey: Buffer,
    readonly recvKey: Buffer,
    readonly localIndex: number,
    readonly remoteIndex: number,
    readonly isInitiator: boolean,
    /** Monotonic ms at derivation. */
    readonly createdAt: number,
  ) {}
}

const NOT_PROMOTED: { readonly promoted: boolean; readonly dropped: Keypair | null } = Object.freeze({
  promoted: false,
  dropped: null,
});

export class Keypairs {
  previous: Keypair | null = null;
  current: Keypair | null = null;
  next: Keypair | null = null;

  /** Installs a freshly derived keypair; returns the keypairs that fell out (to drop from the index table). */
  install(kp: Keypair): Keypair[] {
    const dropped: Keypair[] = [];
    if (kp.isInitiator) {
      if (this.next) {
        if (this.previous) dropped.push(this.previous);
        if (this.current) dropped.push(this.current);
        this.previous = this.next;
        this.next = null;
      } else {
        if (this.previous) dropped.push(this.previous);
        this.previous = this.current;
      }
      this.current = kp;
    } else {
      if (this.next) dropped.push(this.next);
      if (this.previous) dropped.push(this.previous);
      this.next = kp;
      this.previous = null;
    }
    return dropped;
  }

  /** Called for every authenticated receive; true when `kp` was `next` and got promoted. */
  receivedWith(kp: Keypair): { promoted: boolean; dropped: Keypair | null } {
    if (this.next !== kp) return NOT_PROMOTED; // every transport datagram: no allocation
    const dropped = this.previous;
    this.previous = this.current;
    this.current = kp;
    this.next = null;
    return { promoted: true, dropped };
  }

  all(): Keypair[] {
    return [this.previous, this.current, this.next].filter((k): k is Keypair => k !== null);
  }

  clear(): Keypair[] {
    const all = this.all();
    this.previous = this.current = this.next = null;
    return all;
  }
}
