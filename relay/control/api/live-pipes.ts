/**
 * Every live pipe the hub proxies opened (CONNECT tunnels, path-proxy upgrades such as `kubectl
 * exec`, plain path-proxy requests such as watches), by the access key that opened it, so a key
 * that stops being valid loses them within a second instead of keeping them until they end on
 * their own:
 *   revoked  the store's one "access key revoked" event (Store.onAccessKeyRevoked; a store shared
 *            by several replicas tells each of them, so every replica ends its own pipes)
 *   expired  a timer at the earliest expiry among the keys with live pipes, re-checked at least
 *            every second (a wall-clock step cannot delay it)
 * A pipe registers right after its key is authorized, before its stream is opened, and a key
 * revoked in between (the store read said valid, the event came before the registration) is
 * refused: ended keys are remembered for a minute. Capped at `maxPipes` (LIMIT_EXCEEDED beyond).
 */
import type { TimerHandle } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import type { RelayContext } from '../../context/context.js';
import type { Store } from '../store/types.js';

/** Pipes open at once, over all keys. More than the hub can carry (512 streams per agent session). */
export const MAX_LIVE_PIPES = 65_536;
/** Longest wait between two expiry checks while a pipe of an expiring key is open. */
export const EXPIRY_CHECK_MAX_MS = 1_000;
/** How long a revoked key's id is remembered (refuses pipes whose check raced the revocation). */
export const REMEMBER_ENDED_MS = 60_000;
/** Revoked key ids remembered at once (oldest forgotten first). */
export const MAX_REMEMBERED_ENDED = 4_096;

/** Who opened a pipe: the access key's id and its expiry (wall-clock ms, null: never). */
export interface PipeOwner {
  id: string;
  expiresAt: number | null;
}

export type EndReason = 'revoked' | 'expired';

/** Ends one pipe: closes both of its sides. */
export type EndPipe = (reason: TunnelError, why: EndReason) => void;

export interface LivePipesStats {
  /** Pipes ended because their key ended, by reason. */
  ended: Record<EndReason, number>;
  /** Pipes refused because `maxPipes` were open. */
  refusedFull: number;
}

export interface LivePipesOptions {
  ctx: Pick<RelayContext, 'clock' | 'log'>;
  credentials: Pick<Store, 'onAccessKeyRevoked'>;
  maxPipes?: number;
}

/** A client-facing side of a pipe (a socket, a ServerResponse). */
export interface Closable {
  readonly destroyed: boolean;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

interface KeyPipes {
  expiresAt: number | null;
  pipes: Set<{ end: EndPipe }>;
}

export class LivePipes {
  readonly stats: LivePipesStats = { ended: { revoked: 0, expired: 0 }, refusedFull: 0 };
  readonly #opts: LivePipesOptions;
  readonly #byKey = new Map<string, KeyPipes>();
  /** Revoked key id -> monotonic ms it was revoked at (insertion order = age). */
  readonly #revoked = new Map<string, number>();
  readonly #stopWatching: () => void;
  #count = 0;
  #expiryTimer: TimerHandle | undefined;
  /** Wall-clock ms the armed expiry timer fires at. */
  #expiryCheckAt = Number.POSITIVE_INFINITY;

  constructor(opts: LivePipesOptions) {
    this.#opts = opts;
    this.#stopWatching = opts.credentials.onAccessKeyRevoked((id) => this.endKey(id, 'revoked'));
  }

  /** Pipes open now. */
  get size(): number {
    return this.#count;
  }

  /**
   * Registers a pipe of `owner`; `end` is called if the key ends first. Returns the function to call
   * when the pipe closes on its own. UNAUTHENTICATED if the key has already ended; LIMIT_EXCEEDED when full.
   */
  add(owner: PipeOwner, end: EndPipe): () => void {
    const { clock } = this.#opts.ctx;
    const revokedAt = this.#revoked.get(owner.id);
    const expired = owner.expiresAt !== null && owner.expiresAt <= clock.wallNow();
    if (expired || (revokedAt !== undefined && clock.now() - revokedAt < REMEMBER_ENDED_MS)) {
      throw new TunnelError('UNAUTHENTICATED', 'missing, unknown, expired or revoked credential');
    }
    const max = this.#opts.maxPipes ?? MAX_LIVE_PIPES;
    if (this.#count >= max) {
      this.stats.refusedFull++;
      throw new TunnelError('LIMIT_EXCEEDED', `live proxy connections: the relay already holds ${max}`);
    }
    let entry = this.#byKey.get(owner.id);
    if (!entry) {
      entry = { expiresAt: owner.expiresAt, pipes: new Set() };
      this.#byKey.set(owner.id, entry);
    }
    const pipe = { end };
    entry.pipes.add(pipe);
    this.#count++;
    if (owner.expiresAt !== null) this.#armExpiry(owner.expiresAt);
    const pipes = entry.pipes;
    return () => {
      if (!pipes.delete(pipe)) return;
      this.#count--;
      if (pipes.size === 0 && this.#byKey.get(owner.id)?.pipes === pipes) this.#byKey.delete(owner.id);
    };
  }

  /**
   * Registers `side` (the client's socket, or the response of a plain request) as a pipe of `owner`
   * until it closes; the key's end destroys it, which ends the other side too (splice, or the proxy's
   * close handler). Throws as add() does.
   */
  hold(owner: PipeOwner, side: Closable): void {
    const release = this.add(owner, () => side.destroy());
    if (side.destroyed) release();
    else side.once('close', release);
  }

  /** Ends every pipe of the key; returns how many. A revoked key's later pipes are refused (see the file comment). */
  endKey(id: string, reason: EndReason): number {
    if (reason === 'revoked') this.#rememberRevoked(id);
    const entry = this.#byKey.get(id);
    if (!entry) return 0;
    this.#byKey.delete(id);
    const pipes = [...entry.pipes];
    entry.pipes.clear();
    this.#count -= pipes.length;
    this.stats.ended[reason] += pipes.length;
    const err = new TunnelError('UNAUTHENTICATED', `access key ${id} ${reason}`);
    for (const p of pipes) p.end(err, reason);
    this.#opts.ctx.log.info(
      { keyId: id, reason, pipes: pipes.length },
      'ended the live connections of an access key',
    );
    return pipes.length;
  }

  close(): void {
    this.#stopWatching();
    this.#opts.ctx.clock.clearTimer(this.#expiryTimer);
    this.#expiryTimer = undefined;
    this.#byKey.clear();
    this.#revoked.clear();
    this.#count = 0;
  }

  #rememberRevoked(id: string): void {
    const now = this.#opts.ctx.clock.now();
    this.#revoked.delete(id);
    this.#revoked.set(id, now);
    for (const [old, at] of this.#revoked) {
      if (this.#revoked.size <= MAX_REMEMBERED_ENDED && now - at < REMEMBER_ENDED_MS) break;
      this.#revoked.delete(old);
    }
  }

  /** Makes sure an expiry check runs by `expiresAt` (and within EXPIRY_CHECK_MAX_MS). */
  #armExpiry(expiresAt: number): void {
    const { clock } = this.#opts.ctx;
    const now = clock.wallNow();
    const at = Math.min(expiresAt, now + EXPIRY_CHECK_MAX_MS);
    if (this.#expiryTimer !== undefined && this.#expiryCheckAt <= at) return;
    clock.clearTimer(this.#expiryTimer);
    this.#expiryCheckAt = at;
    this.#expiryTimer = clock.setTimer(Math.max(0, at - now), () => {
      this.#expiryTimer = undefined;
      this.#expiryCheckAt = Number.POSITIVE_INFINITY;
      this.#endExpired();
    });
  }

  #endExpired(): void {
    const now = this.#opts.ctx.clock.wallNow();
    let next = Number.POSITIVE_INFINITY;
    for (const [id, entry] of [...this.#byKey]) {
      if (entry.expiresAt === null) continue;
      if (entry.expiresAt <= now) this.endKey(id, 'expired');
      else next = Math.min(next, entry.expiresAt);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#armExpiry(next);
  }
}
