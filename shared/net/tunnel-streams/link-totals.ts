/**
 * Running totals of a binding's stream links: every ARQ and mux counter summed over the links that
 * closed plus the live ones. A link's counters move into the closed sum when it closes, so the totals
 * never go backwards (the relay's /metrics exports them as counters). Read at scrape time only: the
 * hot path keeps bumping each link's own plain numbers.
 */
import { type ArqStats, newArqStats } from '../arq/arq-options.js';
import { type MuxStats, newMuxStats } from '../mux/mux-options.js';
import type { StreamLink } from './stream-link.js';

export interface LinkTotals {
  arq: ArqStats;
  mux: MuxStats;
  /**
   * Inner packets the layer below dropped at once (see StreamLink.sendErrors); one a WireGuard peer held for its
   * send run and its path then refused is counted in that peer's drops (`send-failed`) instead.
   */
  sendErrors: number;
}

export function newLinkTotals(): LinkTotals {
  return { arq: newArqStats(), mux: newMuxStats(), sendErrors: 0 };
}

/** Adds every counter of `src` into the same-named counter of `dst`. */
function addCounts<K extends string>(
  dst: Record<NoInfer<K>, number>,
  src: Readonly<Record<K, number>>,
): void {
  for (const k in src) dst[k] += src[k];
}

function addArqStats(dst: ArqStats, src: ArqStats): void {
  const { garbage, dropped, ...counters } = src;
  addCounts(dst, counters);
  addCounts(dst.garbage, garbage);
  addCounts(dst.dropped, dropped);
}

function addMuxStats(dst: MuxStats, src: MuxStats): void {
  const { refused, ...counters } = src;
  addCounts(dst, counters);
  addCounts(dst.refused, refused);
}

function addTotals(dst: LinkTotals, src: LinkTotals): void {
  addArqStats(dst.arq, src.arq);
  addMuxStats(dst.mux, src.mux);
  dst.sendErrors += src.sendErrors;
}

/** Adds one link's counters into `t`. */
export function addLinkTotals(t: LinkTotals, link: StreamLink): void {
  addTotals(t, { arq: link.arq.stats, mux: link.mux.stats, sendErrors: link.sendErrors });
}

/** `closed` plus every live link, in a new object. */
export function sumLinkTotals(closed: LinkTotals, live: Iterable<StreamLink>): LinkTotals {
  const t = newLinkTotals();
  addTotals(t, closed);
  for (const l of live) addLinkTotals(t, l);
  return t;
}
