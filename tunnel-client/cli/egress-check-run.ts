/**
 * `egress --check`: each destination tried in turn, with a progress line on stderr per destination naming it and its
 * timeout (`checking 2/5 relay.example.com:443 tcp, relay (DERP), timeout 10 s ... ok`), so a blocked port is seen
 * being waited on instead of a silent pause. The verdict: `ok`; `relay only` when only UDP rows (STUN, direct
 * WireGuard: optional, the agent then stays on the relay) failed; `failed` when a TCP row failed (exit 1).
 */
import { escapeText } from '../../shared/kit/cli/terminal-escape.js';
import {
  CHECK_TIMEOUT_MS,
  type CheckOptions,
  type CheckResult,
  checkDestination,
  STUN_TIMEOUT_MS,
} from '../egress/check.js';
import type { Destination } from '../egress/destinations.js';

export type EgressVerdict = 'ok' | 'relay only' | 'failed';

function hostPort(d: Destination): string {
  return `${d.host.includes(':') ? `[${d.host}]` : d.host}:${d.port}`;
}

/** Checks every destination, writing a progress line for each to `progress`. */
export async function checkAll(
  destinations: readonly Destination[],
  o: CheckOptions,
  progress: (line: string) => void,
): Promise<(CheckResult | undefined)[]> {
  const results: (CheckResult | undefined)[] = [];
  for (const [i, d] of destinations.entries()) {
    const timeoutMs =
      d.purpose === 'STUN' ? (o.stunTimeoutMs ?? STUN_TIMEOUT_MS) : (o.timeoutMs ?? CHECK_TIMEOUT_MS);
    const head = `checking ${i + 1}/${destinations.length} ${hostPort(d)} ${d.protocol}, ${d.purpose}`;
    const started = Date.now();
    const r = await checkDestination(d, o);
    const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
    const outcome = r === undefined ? 'not probed' : `${r.check} after ${took}`;
    progress(escapeText(`${head}, timeout ${timeoutMs / 1000} s ... ${outcome}`));
    results.push(r);
  }
  return results;
}

/** What the checks add up to: only optional UDP rows failing leaves the agent working over the relay. */
export function verdictOf(
  destinations: readonly Destination[],
  results: readonly (CheckResult | undefined)[],
): EgressVerdict {
  const failed = destinations.filter((_d, i) => results[i]?.check === 'failed');
  if (failed.length === 0) return 'ok';
  return failed.every((d) => d.protocol === 'udp') ? 'relay only' : 'failed';
}

/** The closing sentence of the text output. */
export function verdictLine(verdict: EgressVerdict): string {
  if (verdict === 'ok') return 'check: ok (every destination answered)';
  if (verdict === 'relay only')
    return 'check: relay only (the UDP rows failed: the agent works over the relay, TCP 443; the direct path needs UDP)';
  return 'check: failed (a TCP destination the agent needs failed; see its line)';
}
