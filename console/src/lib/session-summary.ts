/** The audit page's reading of a session row (exec, attach, port-forward through the relay; relay/data/proxy/session-audit.ts). */
import { when } from './format.js';

const text = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : '');

/** A session row's detail: role, pod and container, command (or ports), start and end, bytes, how it ended. */
export function sessionSummary(detail: unknown): string {
  if (typeof detail !== 'object' || detail === null) return '';
  const d: Record<string, unknown> = { ...detail };
  const pod = `${text(d.namespace)}/${text(d.pod)}${d.container ? ` (${text(d.container)})` : ''}`;
  const what = text(d.command) || (text(d.ports) ? `ports ${text(d.ports)}` : '');
  return (
    `as ${text(d.role)} on ${pod}${what ? `: ${what}` : ''}; ${when(text(d.startedAt))} to ${when(text(d.endedAt))}; ` +
    `${Number(d.bytesIn)} B in, ${Number(d.bytesOut)} B out; ${text(d.exitReason)}`
  );
}
