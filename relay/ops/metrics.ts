/**
 * The relay's metrics as plain data: a few counters with bounded label sets, gauges read from the store at
 * scrape time, and collectors that read the data plane's in-process stats objects at scrape time (no
 * per-packet work: the hot path only bumps the plain numbers it already kept). prom-client writes the
 * exposition (relay/ops/exposition.ts), with its default process and Node.js collectors.
 */
import { packageVersion } from '../../shared/kit/cli/version.js';
import { Exposition, type ExpositionOptions } from './exposition.js';

export type Labels = Record<string, string>;

/** One metric family as rendered: samples are read when /metrics is scraped. */
export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Array<[Labels, number]>;
}

/** Called on every scrape; must be cheap (no I/O) and return bounded label sets. */
export type Collector = () => Family[];

/** Family builders for collectors: a counter with its samples, a one-sample gauge. */
export const counterFamily = (name: string, help: string, samples: Array<[Labels, number]>): Family => ({
  name,
  help,
  type: 'counter',
  samples,
});
export const gaugeFamily = (name: string, help: string, value: number): Family => ({
  name,
  help,
  type: 'gauge',
  samples: [[{}, value]],
});
/** One unlabelled sample. */
export const oneSample = (v: number): Array<[Labels, number]> => [[{}, v]];
/** One sample per key of `r`, labelled `reason` (plus `extra`). */
export const byReason = (r: Record<string, number>, extra: Labels = {}): Array<[Labels, number]> =>
  Object.entries(r).map(([reason, v]) => [{ ...extra, reason }, v]);

/** The key of a label set in a counter's series map. */
function seriesKey(labels: Labels): string {
  return JSON.stringify(Object.entries(labels));
}

class Counter {
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    /** Label combinations beyond this are folded into one `other` series. */
    readonly maxSeries = 200,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    let key = seriesKey(labels);
    let entry = this.#values.get(key);
    if (!entry && this.#values.size >= this.maxSeries) {
      const other = Object.fromEntries(Object.keys(labels).map((k) => [k, 'other']));
      key = seriesKey(other);
      entry = this.#values.get(key);
      if (!entry) {
        entry = { labels: other, value: 0 };
        this.#values.set(key, entry);
      }
    }
    if (!entry) {
      entry = { labels, value: 0 };
      this.#values.set(key, entry);
    }
    entry.value += by;
  }

  /** Exports the unlabelled series at 0 before anything is counted; returns the counter. */
  zeroed(): this {
    this.inc({}, 0);
    return this;
  }

  get(labels: Labels = {}): number {
    return this.#values.get(seriesKey(labels))?.value ?? 0;
  }

  family(): Family {
    return counterFamily(
      this.name,
      this.help,
      [...this.#values.values()].map(({ labels, value }) => [labels, value]),
    );
  }
}

/**
 * Sums counters over a changing set of objects (stream links, WireGuard peers) so the sum never goes
 * backwards: each scrape adds what every live object gained since it was last seen, and `retire()`
 * adds an object's last gains when it goes away. Gains of an object that disappears without
 * `retire()` between two scrapes are lost (an undercount, never a decrease). A counter that reads
 * lower than last time (the object was reset) counts from zero again.
 */
export class RunningTotals<T extends object> {
  readonly #last = new WeakMap<T, number[]>();
  readonly #totals: number[];

  constructor(
    readonly fields: readonly string[],
    readonly read: (o: T) => readonly number[],
  ) {
    this.#totals = fields.map(() => 0);
  }

  /** Adds the gains of every object in `live`; returns the totals (same order as `fields`). */
  sample(live: Iterable<T>): readonly number[] {
    for (const o of live) this.#add(o);
    return this.#totals;
  }

  /** Adds the object's gains since it was last seen; call when it goes away. */
  retire(o: T): void {
    this.#add(o);
    this.#last.delete(o);
  }

  get totals(): readonly number[] {
    return this.#totals;
  }

  #add(o: T): void {
    const now = this.read(o);
    const prev = this.#last.get(o);
    for (let i = 0; i < this.#totals.length; i++) {
      const cur = now[i] ?? 0;
      const before = prev?.[i] ?? 0;
      this.#totals[i]! += cur >= before ? cur - before : cur;
    }
    this.#last.set(o, [...now]);
  }
}

export class Metrics {
  readonly requests = new Counter(
    'tunnel_relay_http_requests_total',
    'HTTP requests by route and status code.',
  );
  readonly registrations = new Counter(
    'tunnel_relay_registrations_total',
    'Agent registrations by result (accepted, pending, rejected, conflict, rate_limited, pending_cap).',
  );
  readonly leaseRenewals = new Counter('tunnel_relay_lease_renewals_total', 'Agent lease renewals.');
  /** Exported from 0 (an alert on it needs the series before the first one). */
  readonly leaseReasonsIgnored = new Counter(
    'tunnel_relay_lease_reasons_ignored_total',
    "Lease renewals whose relayedReason was a well-formed code this relay does not take (not an agent's reason it knows).",
  ).zeroed();
  readonly authFailures = new Counter(
    'tunnel_relay_auth_failures_total',
    'Requests refused for a bad credential.',
  );
  /** Exported from 0 (an alert on it needs the series before the first one). */
  readonly storeScrapeErrors = new Counter(
    'tunnel_relay_store_scrape_errors_total',
    'Scrapes of /metrics whose store queries failed or timed out (their store gauges left out).',
  ).zeroed();
  readonly #collectors = new Set<Collector>();
  readonly #exposition: Exposition;

  constructor(options: ExpositionOptions = { prefix: 'tunnel_relay', version: packageVersion() }) {
    this.#exposition = new Exposition(options);
  }

  /** The content type of render's text. */
  get contentType(): string {
    return this.#exposition.contentType;
  }

  /** Adds a collector read on every scrape (the data plane, the hub proxies); returns its remover. */
  addCollector(c: Collector): () => void {
    this.#collectors.add(c);
    return () => {
      this.#collectors.delete(c);
    };
  }

  /**
   * The exposition text (prom-client's, with its default collectors); `gauges` are sampled by the caller
   * (clusters by status, leases).
   */
  render(gauges: Array<{ name: string; help: string; samples: Array<[Labels, number]> }>): Promise<string> {
    const families = [
      this.requests,
      this.registrations,
      this.leaseRenewals,
      this.leaseReasonsIgnored,
      this.authFailures,
      this.storeScrapeErrors,
    ].map((c) => c.family());
    for (const g of gauges) families.push({ ...g, type: 'gauge' });
    for (const c of this.#collectors) families.push(...c());
    return this.#exposition.render(families);
  }
}
