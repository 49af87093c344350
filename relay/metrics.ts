/**
 * Prometheus text exposition (format 0.0.4), written by hand: a few counters with bounded label
 * sets, plus gauges read from the store at scrape time.
 */

type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(
    ([k, v]) => `${k}="${v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"`,
  );
  return parts.length ? `{${parts.join(',')}}` : '';
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

  get(labels: Labels = {}): number {
    return this.#values.get(labelText(labels))?.value ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.#values.values())
      lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines.join('\n');
  }
}

export class Metrics {
  readonly requests = new Counter(
    'tunnel_relay_http_requests_total',
    'HTTP requests by route and status code.',
  );
  readonly registrations = new Counter(
    'tunnel_relay_registrations_total',
    'Agent registrations by result (accepted, pending, rejected, conflict, rate_limited).',
  );
  readonly leaseRenewals = new Counter('tunnel_relay_lease_renewals_total', 'Agent lease renewals.');
  readonly authFailures = new Counter(
    'tunnel_relay_auth_failures_total',
    'Requests refused for a bad credential.',
  );

  /** The exposition text; `gauges` are sampled by the caller (clusters by status, leases). */
  render(gauges: Array<{ name: string; help: string; samples: Array<[Labels, number]> }>): string {
    const parts = [this.requests, this.registrations, this.leaseRenewals, this.authFailures].map((c) =>
      c.render(),
    );
    for (const g of gauges) {
      const lines = [`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`];
      for (const [labels, v] of g.samples) lines.push(`${g.name}${labelText(labels)} ${v}`);
      parts.push(lines.join('\n'));
    }
    return `${parts.join('\n')}\n`;
  }
}
