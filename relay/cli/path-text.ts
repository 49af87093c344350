/**
 * How `cluster list` (the PATH column) and `cluster get` print an agent's path: the path with the RTT of the
 * path in use (and, relayed, the reason's code), and in detail the remote, each path's RTT, the last switch and
 * why it is not direct (the code, its words and who reported it: the agent or the hub).
 */
import { ageOf } from '../../shared/kit/cli/age.js';
import { formatRtt } from '../../shared/kit/rtt-text.js';
import { relayedReasonText } from '../../shared/net/tunnel-endpoint/relayed-reasons.js';
import type { HubPathDetail, ReasonedPathDetail } from '../control/store/path-reason.js';

/** The API's `pathDetail` (shared/api/path-detail.ts); `reasonFrom` is absent from older relays. */
export type PathDetail = HubPathDetail & Partial<Pick<ReasonedPathDetail, 'reasonFrom'>>;

interface WithPath {
  path?: string;
  rttMs?: number | null;
  pathDetail?: PathDetail | null;
}

export { formatRtt };

/** The RTT of the path in use: the direct path's, else the relayed path's, else the hub's probes'. */
function rttInUse(c: WithPath): number | null {
  const d = c.pathDetail;
  const rtt = c.path === 'direct' ? d?.rttDirectMs : d?.rttRelayedMs;
  return rtt ?? c.rttMs ?? null;
}

/** `direct 0.41 ms`, `relayed 12 ms`, `none`. */
export function pathCell(c: WithPath): string {
  const path = c.path ?? 'none';
  const rtt = path === 'none' ? null : rttInUse(c);
  return rtt === null ? path : `${path} ${formatRtt(rtt)}`;
}

/** `cluster list`'s PATH cell: `relayed 12 ms (443-only)`, `direct 0.41 ms`, `none`. */
export function pathListCell(c: WithPath): string {
  const reason = c.path === 'relayed' ? c.pathDetail?.reason : null;
  return reason ? `${pathCell(c)} (${reason})` : pathCell(c);
}

function reasonLine(d: PathDetail): string[] {
  if (!d.reason) return [];
  const from = d.reasonFrom ? `, reported by the ${d.reasonFrom}` : '';
  return [`relayed why:   ${relayedReasonText(d.reason)}${from}`];
}

/** `cluster get`'s path lines (none while the agent is not connected). */
export function pathLines(c: WithPath, nowMs: number): string[] {
  const d = c.pathDetail;
  if (!d) return [];
  const rtt = (label: string, ms: number | null) => (ms === null ? [] : [`${label} ${formatRtt(ms)}`]);
  const rtts = [...rtt('direct', d.rttDirectMs), ...rtt('relayed', d.rttRelayedMs)];
  return [
    `path remote:   ${d.remote ?? '-'}`,
    `path rtt:      ${rtts.length > 0 ? rtts.join(', ') : '-'}`,
    `path switched: ${d.lastSwitch ? `${d.lastSwitch} (${ageOf(d.lastSwitch, nowMs)} ago)` : '-'}`,
    ...reasonLine(d),
  ];
}
