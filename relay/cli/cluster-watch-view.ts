/**
 * What `cluster list --watch` shows (cluster-watch.ts follows the stream): the clusters known so far and how
 * each change is printed in its three forms:
 *   terminal  the `cluster list` table, redrawn (at most every REDRAW_MS, and every AGE_REFRESH_MS for the
 *             ages) under a status line;
 *   lines     the table once, then the cluster's row per change and `NAME  deleted` per deletion;
 *   json      one JSON object per line.
 * A cluster is printed when it passes the filters now or did before the change (a watch of Pending clusters
 * shows the one that turned Accepted).
 */
import { type Printer, streamPrinter } from '../../shared/kit/cli/output.js';
import type { AdminFlags } from './admin-client.js';
import type { Cluster } from './cluster.js';
import { clusterRows } from './cluster-list.js';

export const REDRAW_MS = 100;
export const AGE_REFRESH_MS = 5_000;
const CLEAR_SCREEN = '\u001b[H\u001b[2J';

export interface WatchView {
  /** A stream's snapshot: the first is printed whole, a later one (after a reconnect) as its differences. */
  snapshot(clusters: ReadonlyMap<string, Cluster>): void;
  change(c: Cluster): void;
  deleted(name: string): void;
  /** A note on the stream (lost, reconnecting). */
  status(message: string): void;
  close(): void;
}

type Mode = 'terminal' | 'lines' | 'json';

export interface WatchViewOptions {
  flags: Pick<AdminFlags, 'output' | 'server'>;
  matches(c: Cluster): boolean;
  /** Default: stdout / stderr, a terminal when stdout is one. */
  out?: Printer;
  raw?: NodeJS.WritableStream;
  terminal?: boolean;
}

export function watchViewFor(opts: WatchViewOptions): WatchView {
  const terminal = opts.terminal ?? process.stdout.isTTY === true;
  const mode: Mode = opts.flags.output === 'json' ? 'json' : terminal ? 'terminal' : 'lines';
  return new ClusterWatchView(opts, mode);
}

class ClusterWatchView implements WatchView {
  readonly #opts: WatchViewOptions;
  readonly #mode: Mode;
  readonly #out: Printer;
  readonly #raw: NodeJS.WritableStream;
  /** Every cluster of the last snapshot and changes, with its JSON (to compare after a reconnect). */
  readonly #known = new Map<string, { cluster: Cluster; json: string }>();
  #started = false;
  #statusLine = '';
  #redrawTimer: NodeJS.Timeout | undefined;
  #ageTimer: NodeJS.Timeout | undefined;

  constructor(opts: WatchViewOptions, mode: Mode) {
    this.#opts = opts;
    this.#mode = mode;
    this.#out = opts.out ?? streamPrinter();
    this.#raw = opts.raw ?? process.stdout;
  }

  snapshot(clusters: ReadonlyMap<string, Cluster>): void {
    this.#statusLine = '';
    if (this.#started) {
      for (const [name, c] of clusters) {
        if (this.#known.get(name)?.json !== JSON.stringify(c)) this.change(c);
      }
      for (const name of [...this.#known.keys()]) if (!clusters.has(name)) this.deleted(name);
      if (this.#mode === 'terminal') this.#scheduleRedraw();
      return;
    }
    this.#started = true;
    for (const [name, c] of clusters) this.#known.set(name, { cluster: c, json: JSON.stringify(c) });
    const shown = this.#shown();
    if (this.#mode === 'json') {
      for (const c of shown) this.#out.jsonLine({ event: 'cluster', cluster: c });
      this.#out.jsonLine({ event: 'ready' });
    } else if (this.#mode === 'lines') {
      this.#out.line(shown.length === 0 ? 'no clusters' : clusterRows(shown, Date.now()));
    } else {
      this.#redraw();
      this.#ageTimer = setInterval(() => this.#redraw(), AGE_REFRESH_MS);
    }
  }

  change(c: Cluster): void {
    const before = this.#known.get(c.name)?.cluster;
    this.#known.set(c.name, { cluster: c, json: JSON.stringify(c) });
    if (!this.#opts.matches(c) && !(before && this.#opts.matches(before))) return;
    if (this.#mode === 'json') this.#out.jsonLine({ event: 'cluster', cluster: c });
    else if (this.#mode === 'lines') this.#out.line(clusterRows([c], Date.now()).split('\n')[1] ?? c.name);
    else this.#scheduleRedraw();
  }

  deleted(name: string): void {
    const before = this.#known.get(name)?.cluster;
    this.#known.delete(name);
    if (!before || !this.#opts.matches(before)) return;
    if (this.#mode === 'json') this.#out.jsonLine({ event: 'cluster-deleted', name });
    else if (this.#mode === 'lines') this.#out.lines([`${name}  deleted`]);
    else this.#scheduleRedraw();
  }

  status(message: string): void {
    if (this.#mode === 'terminal' && this.#started) {
      this.#statusLine = message;
      this.#scheduleRedraw();
    } else this.#out.note(message);
  }

  close(): void {
    clearTimeout(this.#redrawTimer);
    clearInterval(this.#ageTimer);
  }

  #shown(): Cluster[] {
    return [...this.#known.values()].map((k) => k.cluster).filter((c) => this.#opts.matches(c));
  }

  #scheduleRedraw(): void {
    if (this.#redrawTimer !== undefined) return;
    this.#redrawTimer = setTimeout(() => {
      this.#redrawTimer = undefined;
      this.#redraw();
    }, REDRAW_MS);
  }

  #redraw(): void {
    const shown = this.#shown();
    const head = `watching ${this.#opts.flags.server}: ${shown.length} cluster(s); Ctrl-C to quit`;
    this.#raw.write(CLEAR_SCREEN);
    this.#out.line(shown.length === 0 ? 'no clusters' : clusterRows(shown, Date.now()));
    this.#out.line(`\n${this.#statusLine === '' ? head : `${head}\n${this.#statusLine}`}`);
  }
}
