/**
 * The agent's log lines about its path to the hub, one per change: the session came up (relayed, with the reason),
 * it went direct (to which remote), it fell back to relayed (with the reason). The path is read at each status tick
 * (agent-session.ts), so a path that changes and changes back between two ticks logs nothing.
 */
import { relayedReasonText } from '../../shared/net/tunnel-endpoint/relayed-reasons.js';

export interface PathView {
  path: 'direct' | 'relayed' | 'none';
  remote: string | null;
  reason: string | null;
}

function why(reason: string | null): string {
  return reason === null ? '' : `: ${relayedReasonText(reason)}`;
}

export class PathChangeLog {
  #logged: 'direct' | 'relayed' | 'none' = 'none';

  /** The session came up (on the relay, as every session starts): the line to log. */
  sessionUp(view: PathView): string {
    this.#logged = 'relayed';
    return `WireGuard session to the hub is up (relayed${why(view.reason)})`;
  }

  sessionDown(): string {
    this.#logged = 'none';
    return 'WireGuard session to the hub is down';
  }

  /** The line for a change of path since the last one logged, or null when the path is as logged. */
  note(view: PathView): string | null {
    if (this.#logged === 'none' || view.path === 'none' || view.path === this.#logged) return null;
    this.#logged = view.path;
    if (view.path === 'direct') return `path: direct to the hub at ${view.remote ?? '-'}`;
    return `path: fell back to relayed${why(view.reason)}`;
  }
}
