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
  /** Inner packets the layer below dropped at once (see StreamLink.sendErrors). */
  sendErrors: number;
}

export function newLinkTotals(): LinkTotals {
  return { arq: newArqStats(), mux: newMuxStats(), sendErrors: 0 };
}

type Numbers = { [k: string]: number | Numbers };

/** Adds every number of `src` into `dst` (same shape). */
function addInto(dst: Numbers, src: Numbers): void {
  for (const [k, v] of Object.entries(src)) {
    const d = dst[k];
    if (typeof v === 'number') dst[k] = (typeof d === 'number' ? d : 0) + v;
    else if (d !== undefined && typeof d !== 'number') addInto(d, v);
  }
}

/** Adds one link's counters into `t`. */
export function addLinkTotals(t: LinkTotals, link: StreamLink): void {
  addInto(t.arq as unknown as Numbers, link.arq.stats as unknown as Numbers);
  addInto(t.mux as unknown as Numbers, link.mux.stats as unknown as Numbers);
  t.sendErrors += link.sendErrors;
}

/** `closed` plus every live link, in a new object. */
export function sumLinkTotals(closed: LinkTotals, live: Iterable<StreamLink>): LinkTotals {
  const t = newLinkTotals();
  addInto(t as unknown as Numbers, closed as unknown as Numbers);
  for (const l of live) addLinkTotals(t, l);
  return t;
}
