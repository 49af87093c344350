/** Metrics of the events feed (GET /api/v1/events): streams open, opened, ended by reason, refused at a cap. */
import { byReason, counterFamily, type Family, gaugeFamily, oneSample } from '../../ops/metrics.js';
import type { StreamEndReason } from './event-stream.js';

export interface EventsStats {
  opened: number;
  ended: Record<StreamEndReason, number>;
  /** Refused at the relay-wide cap (`total`) or the per-key cap (`key`). */
  refused: { total: number; key: number };
}

export function newEventsStats(): EventsStats {
  return {
    opened: 0,
    ended: { revoked: 0, expired: 0, closing: 0, slow: 0, client: 0 },
    refused: { total: 0, key: 0 },
  };
}

export function eventsFamilies(stats: EventsStats, open: number, clusters: number): Family[] {
  const p = 'tunnel_relay_events_';
  return [
    gaugeFamily(`${p}streams`, 'Event streams (GET /api/v1/events) open.', open),
    gaugeFamily(
      `${p}clusters`,
      'Clusters the events feed holds in memory (0 until the first stream).',
      clusters,
    ),
    counterFamily(`${p}streams_opened_total`, 'Event streams opened.', oneSample(stats.opened)),
    counterFamily(
      `${p}streams_ended_total`,
      'Event streams ended, by reason (client, slow: dropped slow consumer, revoked, expired, closing).',
      byReason(stats.ended),
    ),
    counterFamily(
      `${p}streams_refused_total`,
      'Event streams refused at a cap, by cap (total: 503 AT_CAPACITY, key: 429 LIMIT_EXCEEDED).',
      Object.entries(stats.refused).map(([cap, v]) => [{ cap }, v]),
    ),
  ];
}
