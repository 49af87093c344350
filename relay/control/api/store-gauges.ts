/**
 * The gauges /metrics reads from the store at each scrape (clusters by status, fresh leases, relayed reasons,
 * registration limiter entries), and whether the store answered them. A store that fails or does not answer
 * within STORE_SCRAPE_TIMEOUT_MS leaves those gauges out and reports `tunnel_relay_store_up 0` (counted in
 * `tunnel_relay_store_scrape_errors_total`), so the process and data-plane families are still scraped while the
 * store is down. `tunnel_relay_ready` is what /readyz would answer: 1 while the store answers and the relay is
 * not draining.
 */
import type { RelayContext } from '../../context/context.js';
import type { Labels } from '../../ops/metrics.js';
import { graceMs } from '../model/conditions.js';
import { AGENTS_RELAYED_METRIC, agentsRelayedSamples } from '../model/relayed-reason-metrics.js';
import { PATH_REPORT_STALE_MS } from '../store/agent-path-row.js';

/** How long a scrape waits for the store's answers. */
export const STORE_SCRAPE_TIMEOUT_MS = 5_000;

export interface GaugeFamily {
  name: string;
  help: string;
  samples: Array<[Labels, number]>;
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('store scrape timed out')), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

async function fromStore(ctx: RelayContext): Promise<GaugeFamily[]> {
  const now = ctx.clock.wallNow();
  const byStatus = await ctx.store.countClustersByStatus();
  // Fresh = renewed within the grace (now < renew + grace), the same rule as Available=True.
  const fresh = await ctx.store.countLeasesSince(now - graceMs(ctx.config.leaseDurationSeconds) + 1);
  const relayed = await ctx.store.relayedReasonCounts(now - PATH_REPORT_STALE_MS + 1);
  const limiterEntries = await ctx.limiter.bySource.size();
  return [
    {
      name: 'tunnel_relay_clusters',
      help: 'Clusters by registration status.',
      samples: Object.entries(byStatus).map(([status, n]) => [{ status }, n]),
    },
    {
      name: 'tunnel_relay_leases_fresh',
      help: 'Clusters whose lease is fresh (Available=True).',
      samples: [[{}, fresh]],
    },
    {
      name: AGENTS_RELAYED_METRIC,
      help: "Agents relayed now by the reason their cluster shows and who reported it (agent, hub), from the store's reports.",
      samples: agentsRelayedSamples(relayed),
    },
    {
      name: 'tunnel_relay_registration_limiter_entries',
      help: 'Sources being counted for failed registrations.',
      samples: [[{ by: 'source' }, limiterEntries]],
    },
  ];
}

/** The scrape's store gauges, and the ones that hold whatever the store does. */
export async function storeGauges(ctx: RelayContext): Promise<GaugeFamily[]> {
  let stored: GaugeFamily[] = [];
  let up = 1;
  try {
    stored = await withTimeout(fromStore(ctx), STORE_SCRAPE_TIMEOUT_MS);
  } catch (err) {
    up = 0;
    ctx.metrics.storeScrapeErrors.inc();
    ctx.log.warn({ err }, 'metrics: the store did not answer the scrape; its gauges are left out');
  }
  return [
    ...stored,
    {
      name: 'tunnel_relay_agents_connected',
      help: 'Clusters with a live agent session.',
      samples: [[{}, ctx.hooks.connectedCount]],
    },
    {
      name: 'tunnel_relay_store_up',
      help: "1 when the store answered this scrape's queries in time, else 0.",
      samples: [[{}, up]],
    },
    {
      name: 'tunnel_relay_ready',
      help: 'What /readyz answers: 1 while the store answers and the relay is not draining, else 0.',
      samples: [[{}, up === 1 && !ctx.drain.draining ? 1 : 0]],
    },
  ];
}
