/**
 * Prometheus text exposition (format 0.0.4), written by hand: a few counters with bounded label
 * sets, gauges read from the store at scrape time, and collectors that read the data plane's
 * in-process stats objects at scrape time (no per-packet work: the hot path only bumps the plain
 * numbers it already kept).
 */

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

/** Label value escaping per the text format: backslash, double quote and line feed. */
export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** HELP text escaping: backslash and line feed. */
function escapeHelp(v: string): string {
  return v.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

export function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function sampleValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

export function renderFamily(f: Family): string {
  const lines = [`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`];
  for (const [labels, v] of f.samples) lines.push(`${f.name}${labelText(labels)} ${sampleValue(v)}`);
  return lines.join('\n');
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
    let key = labelText(labels);
    let entry = this.#values.get(key);
    if (!entry && this.#values.size >= this.maxSeries) {
      const other = Object.fromEntries(Object.keys(labels).map((k) => [k, 'other']));
      key = labelText(other);
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
    return this.#values.get(labelText(labels))?.value ?? 0;
  }

  render(): string {
    return renderFamily({
      name: this.name,
      help: this.help,
      type: 'counter',
      samples: [...this.#values.values()].map(({ labels, value }) => [labels, value]),
    });
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
  readonly #collectors = new Set<Collector>();

  /** Adds a collector read on every scrape (the data plane, the hub proxies); returns its remover. */
  addCollector(c: Collector): () => void {
    this.#collectors.add(c);
    return () => {
      this.#collectors.delete(c);
    };
  }

  /** The exposition text; `gauges` are sampled by the caller (clusters by status, leases). */
  render(gauges: Array<{ name: string; help: string; samples: Array<[Labels, number]> }>): string {
    const parts = [
      this.requests,
      this.registrations,
      this.leaseRenewals,
      this.leaseReasonsIgnored,
      this.authFailures,
    ].map((c) => c.render());
    for (const g of gauges) parts.push(renderFamily({ ...g, type: 'gauge' }));
    for (const c of this.#collectors) for (const f of c()) parts.push(renderFamily(f));
    return `${parts.join('\n')}\n`;
  }
}
