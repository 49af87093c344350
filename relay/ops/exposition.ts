/**
 * The /metrics exposition, written by prom-client: its default collectors (process_* and nodejs_*: resident
 * memory, CPU seconds, open file descriptors, start time, event loop lag, heap, GC), a `<program>_build_info`
 * gauge, and the relay's own families. Those are plain data (relay/ops/metrics.ts `Family`), read from the
 * in-process counters and stats objects at each scrape, so the hot path never touches prom-client; here each
 * family becomes a prom-client Counter or Gauge whose samples are replaced at every scrape. A family that is
 * no longer reported (its collector was removed) leaves the registry.
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Family, Labels } from './metrics.js';

interface Registered {
  readonly type: Family['type'];
  readonly labelKey: string;
  readonly metric: Counter<string> | Gauge<string>;
}

export interface ExpositionOptions {
  /** The metric name prefix of the program (`tunnel_relay`): `<prefix>_build_info`. */
  readonly prefix: string;
  /** The program's version, the build_info `version` label. */
  readonly version: string;
}

export class Exposition {
  readonly registry = new Registry();
  readonly #families = new Map<string, Registered>();

  constructor(options: ExpositionOptions) {
    collectDefaultMetrics({ register: this.registry });
    const buildInfo = new Gauge({
      name: `${options.prefix}_build_info`,
      help: 'A 1 labelled with the version of the program and of Node.js it runs on.',
      labelNames: ['version', 'node_version'],
      registers: [this.registry],
    });
    buildInfo.set({ version: options.version, node_version: process.versions.node }, 1);
  }

  /** The text format's content type (`text/plain; version=0.0.4; charset=utf-8`). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Replaces the samples of every family with `families` and renders the whole registry. */
  async render(families: readonly Family[]): Promise<string> {
    const seen = new Set<string>();
    for (const family of families) {
      if (seen.has(family.name)) continue;
      seen.add(family.name);
      this.#write(family);
    }
    for (const name of this.#families.keys()) {
      if (!seen.has(name)) {
        this.registry.removeSingleMetric(name);
        this.#families.delete(name);
      }
    }
    return this.registry.metrics();
  }

  #write(family: Family): void {
    const metric = this.#metricFor(family);
    metric.reset();
    for (const [labels, value] of family.samples) {
      if (metric instanceof Counter) {
        // A counter sample is a running total read from the process; a non-finite one is not exported.
        if (Number.isFinite(value) && value >= 0) metric.inc(labels, value);
      } else metric.set(labels, value);
    }
  }

  /** The prom-client metric of `family`, made again when its type or label names changed. */
  #metricFor(family: Family): Counter<string> | Gauge<string> {
    const labelNames = labelNamesOf(family.samples.map(([labels]) => labels));
    const labelKey = labelNames.join(',');
    const existing = this.#families.get(family.name);
    if (existing && existing.type === family.type && existing.labelKey === labelKey) return existing.metric;
    if (existing) this.registry.removeSingleMetric(family.name);
    const config = { name: family.name, help: family.help, labelNames, registers: [this.registry] };
    const metric = family.type === 'counter' ? new Counter(config) : new Gauge(config);
    this.#families.set(family.name, { type: family.type, labelKey, metric });
    return metric;
  }
}

function labelNamesOf(sets: readonly Labels[]): string[] {
  const names = new Set<string>();
  for (const labels of sets) for (const name of Object.keys(labels)) names.add(name);
  return [...names].sort();
}
