/**
 * The cluster feed behind GET /api/v1/events: the latest state of every cluster, kept in memory once the first
 * stream opens, from which its view (the JSON that GET /api/v1/clusters/NAME answers) is built, and every change of
 * that view handed to the open streams (event-stream.ts). What makes a change:
 *   stored   the routes call RelayHooks.clusterChanged after each committed change (create, accept, deny,
 *            register, lease, unjoin, values, rotate-psk, delete), and the key-loss events of another
 *            replica sharing a PostgreSQL store (delete, deny, unjoin) arrive as hook events too: the
 *            cluster is read again and its view sent, or `cluster-deleted` when it is gone;
 *   live     the hub's connection reports (RelayHooks.updateConnection, every couple of seconds per agent
 *            and at once on a handshake or a lost relay connection);
 *   time     Available turns Unknown when the lease goes stale and an unused PSK turns expired at its
 *            expiry, without any write: a sweep every SWEEP_MS re-checks the clusters that are due;
 *   others   with a store shared by several replicas (`reconcileMs` set), the cluster list is read every
 *            `reconcileMs` and each cluster whose stored record differs from the one held (or that is new, or
 *            gone) is read again: changes made through another replica arrive within that time. A PSK rotated
 *            there changes no cluster record: it shows with the cluster's next change.
 * Live and time changes are compared with the view last sent, leaving out the fields that move all the
 * time (VOLATILE_FIELDS: traffic counters, RTT, last handshake): those are carried with every event as
 * they stand, but a change of only them sends nothing. One refresh runs at a time, in order.
 *
 * What it holds per cluster is small: the stored record and PSK summary (the record's claims are capped by
 * shared/api/claim-limits.ts), a 27-character digest of the view last built and one time. Views are built when they are
 * sent: once per change for every stream, and for a stream's snapshot as it is written.
 */
import { createHash } from 'node:crypto';
import type { TimerHandle } from '../../../shared/clock.js';
import { clusterDetailView, type RelayContext } from '../../context/context.js';
import { availableCondition, graceMs } from '../model/conditions.js';
import type { PskSummary } from '../store/psk-refusal.js';
import type { ClusterRecord } from '../store/types.js';

/** How often clusters whose view changes with time alone are re-checked. */
export const SWEEP_MS = 1_000;
/** After a store read fails, the cluster is read again this much later. */
export const RETRY_MS = 1_000;
/** Refreshes in a row before the feed lets other I/O run. */
export const YIELD_EVERY = 64;
/** View fields whose change alone sends no event. */
export const VOLATILE_FIELDS: ReadonlySet<string> = new Set([
  'bytesIn',
  'bytesOut',
  'rttMs',
  'lastHandshake',
]);

export type FeedMessage =
  /** `json`: the cluster's view. */
  | { kind: 'cluster'; name: string; group: string; json: string }
  /** `json`: `{"name": ...}`. */
  | { kind: 'cluster-deleted'; name: string; group: string; json: string };

export interface FeedSubscriber {
  /** Called with every change, in order; must not throw. */
  deliver(message: FeedMessage): void;
}

interface FeedEntry {
  group: string;
  record: ClusterRecord;
  psk: PskSummary | null;
  /** SHA-256 (base64url, truncated) of the view last built without VOLATILE_FIELDS. */
  stable: string;
  /** Wall-clock ms at which the view changes with time alone (Infinity: never). */
  dueAt: number;
}

type Cause = 'stored' | 'live';

export type FeedContext = Pick<RelayContext, 'store' | 'clock' | 'config' | 'hooks' | 'log'>;

export interface FeedOptions {
  /** Read the whole cluster list this often to catch other replicas' changes; null: never (one relay). */
  reconcileMs: number | null;
}

export class ClusterFeed {
  readonly #ctx: FeedContext;
  readonly #reconcileMs: number | null;
  readonly #entries = new Map<string, FeedEntry>();
  readonly #subscribers = new Set<FeedSubscriber>();
  /** Clusters to refresh; `stored` wins over `live`. */
  readonly #dirty = new Map<string, Cause>();
  readonly #detach: Array<() => void> = [];
  #state: 'idle' | 'loading' | 'ready' | 'closed' = 'idle';
  #loading: Promise<void> | null = null;
  #flushing = false;
  #flushQueued = false;
  #sweepTimer: TimerHandle | undefined;
  #retryTimer: TimerHandle | undefined;
  #reconcileTimer: TimerHandle | undefined;

  constructor(ctx: FeedContext, opts: FeedOptions = { reconcileMs: null }) {
    this.#ctx = ctx;
    this.#reconcileMs = opts.reconcileMs;
    const { hooks } = ctx;
    const onStored = (name: string) => this.#mark(name, 'stored');
    const onLive = (name: string) => this.#mark(name, 'live');
    const onKeyLoss = (e: { cluster: string }) => this.#mark(e.cluster, 'stored');
    hooks.on('cluster-changed', onStored);
    hooks.on('connection-reported', onLive);
    for (const kind of ['cluster-deleted', 'cluster-denied', 'agent-unjoined'] as const) {
      hooks.on(kind, onKeyLoss);
      this.#detach.push(() => hooks.off(kind, onKeyLoss));
    }
    this.#detach.push(
      () => hooks.off('cluster-changed', onStored),
      () => hooks.off('connection-reported', onLive),
    );
  }

  /** Loads every cluster on the first call (later calls wait for that load); rejects when the store fails. */
  ready(): Promise<void> {
    if (this.#state === 'ready') return Promise.resolve();
    if (this.#loading === null) {
      this.#state = 'loading';
      this.#loading = this.#load().catch((err: unknown) => {
        this.#state = 'idle';
        this.#loading = null;
        throw err;
      });
    }
    return this.#loading;
  }

  /** Clusters held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The names of the clusters `visible` admits (by group), in the order they were loaded or created. */
  names(visible: (group: string) => boolean): string[] {
    const out: string[] = [];
    for (const [name, e] of this.#entries) if (visible(e.group)) out.push(name);
    return out;
  }

  /** The cluster's current view (JSON), or undefined once it is gone. */
  viewOf(name: string): string | undefined {
    const e = this.#entries.get(name);
    return e && JSON.stringify(clusterDetailView(this.#ctx, e.record, e.psk));
  }

  subscribe(subscriber: FeedSubscriber): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  close(): void {
    this.#state = 'closed';
    for (const detach of this.#detach.splice(0)) detach();
    this.#ctx.clock.clearTimer(this.#sweepTimer);
    this.#ctx.clock.clearTimer(this.#retryTimer);
    this.#ctx.clock.clearTimer(this.#reconcileTimer);
    this.#subscribers.clear();
    this.#entries.clear();
    this.#dirty.clear();
  }

  async #load(): Promise<void> {
    const { store, clock } = this.#ctx;
    const records = await store.listClusters();
    for (const record of records) {
      const psk = await store.currentPsk(record.name, clock.wallNow());
      this.#entries.set(record.name, this.#entry(record, psk).entry);
    }
    if (this.#state !== 'loading') return;
    this.#state = 'ready';
    this.#armSweep();
    this.#armReconcile();
    // Changes committed while the list was read were marked dirty: read them again now.
    void this.#flush();
  }

  #mark(name: string, cause: Cause): void {
    if (this.#state !== 'loading' && this.#state !== 'ready') return;
    if (this.#dirty.get(name) !== 'stored') this.#dirty.set(name, cause);
    if (this.#state === 'ready' && !this.#flushing && !this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => {
        this.#flushQueued = false;
        void this.#flush();
      });
    }
  }

  async #flush(): Promise<void> {
    if (this.#flushing || this.#state !== 'ready') return;
    this.#flushing = true;
    try {
      // Map iteration sees the entries added while it runs (a name marked again goes to the end).
      let done = 0;
      for (const [name, cause] of this.#dirty) {
        // Let the sockets drain between bursts (store reads of SQLite do not leave the microtask queue).
        if (++done % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
        if (this.#state !== 'ready') return;
        this.#dirty.delete(name);
        if (cause === 'live') this.#recheck(name);
        else if (!(await this.#reread(name))) {
          this.#dirty.set(name, 'stored');
          this.#scheduleRetry();
          return;
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** Reads the cluster from the store and sends its view (or its deletion); false when the store failed. */
  async #reread(name: string): Promise<boolean> {
    const { store, clock, log } = this.#ctx;
    try {
      const record = await store.getCluster(name);
      const psk = record && (await store.currentPsk(name, clock.wallNow()));
      if (this.#state !== 'ready') return true;
      const old = this.#entries.get(name);
      if (record === null) {
        if (old === undefined) return true;
        this.#entries.delete(name);
        this.#send({ kind: 'cluster-deleted', name, group: old.group, json: JSON.stringify({ name }) });
        return true;
      }
      const { entry, json } = this.#entry(record, psk);
      this.#entries.set(name, entry);
      this.#send({ kind: 'cluster', name, group: entry.group, json });
      return true;
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      log.warn({ cluster: name, err: reason }, 'events feed: cannot read the cluster; retrying');
      return false;
    }
  }

  /** Builds the view again from what is held (live status and time changed); sends it if it differs. */
  #recheck(name: string): void {
    const old = this.#entries.get(name);
    if (old === undefined) return;
    const { entry, json } = this.#entry(old.record, old.psk);
    this.#entries.set(name, entry);
    if (entry.stable !== old.stable) {
      this.#send({ kind: 'cluster', name, group: entry.group, json });
    }
  }

  /** The entry to hold for the cluster, and its view (JSON) as of now. */
  #entry(record: ClusterRecord, psk: PskSummary | null): { entry: FeedEntry; json: string } {
    const { clock, config } = this.#ctx;
    const view = clusterDetailView(this.#ctx, record, psk);
    const stableView = JSON.stringify(Object.entries(view).filter(([k]) => !VOLATILE_FIELDS.has(k)));
    const stable = createHash('sha256').update(stableView).digest('base64url').slice(0, 27);
    const now = clock.wallNow();
    const available = availableCondition(record, now, config.leaseDurationSeconds);
    let dueAt = Number.POSITIVE_INFINITY;
    if (available.status === 'True' && record.leaseRenewAt !== null) {
      dueAt = record.leaseRenewAt + graceMs(config.leaseDurationSeconds);
    }
    if (psk !== null && psk.state === 'unused') dueAt = Math.min(dueAt, psk.expiresAt);
    return { entry: { group: record.group, record, psk, stable, dueAt }, json: JSON.stringify(view) };
  }

  #send(message: FeedMessage): void {
    for (const s of this.#subscribers) s.deliver(message);
  }

  #armSweep(): void {
    this.#sweepTimer = this.#ctx.clock.setTimer(SWEEP_MS, () => {
      if (this.#state !== 'ready') return;
      const now = this.#ctx.clock.wallNow();
      for (const [name, e] of this.#entries) if (e.dueAt <= now) this.#mark(name, 'live');
      this.#armSweep();
    });
  }

  #armReconcile(): void {
    if (this.#reconcileMs === null) return;
    this.#reconcileTimer = this.#ctx.clock.setTimer(this.#reconcileMs, () => {
      void this.#reconcile().finally(() => {
        if (this.#state === 'ready') this.#armReconcile();
      });
    });
  }

  /** Marks every cluster whose stored record differs from the one held, and every one gone or new. */
  async #reconcile(): Promise<void> {
    let records: ClusterRecord[];
    try {
      records = await this.#ctx.store.listClusters();
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      this.#ctx.log.warn(
        { err: reason },
        'events feed: cannot list clusters; retrying at the next reconcile',
      );
      return;
    }
    if (this.#state !== 'ready') return;
    const seen = new Set<string>();
    for (const record of records) {
      seen.add(record.name);
      const held = this.#entries.get(record.name);
      if (held === undefined || JSON.stringify(held.record) !== JSON.stringify(record))
        this.#mark(record.name, 'stored');
    }
    for (const name of this.#entries.keys()) if (!seen.has(name)) this.#mark(name, 'stored');
  }

  #scheduleRetry(): void {
    if (this.#retryTimer !== undefined) return;
    this.#retryTimer = this.#ctx.clock.setTimer(RETRY_MS, () => {
      this.#retryTimer = undefined;
      void this.#flush();
    });
  }
}
