/**
 * The relay's log lines about what agents do, at info, one per change (the 'connection-changed' events of
 * this process's sessions, and the reasons agents report with their leases): an agent connected (with its path,
 * and why it is relayed), went direct (to which remote), went relayed (why), reported another reason while
 * relayed, disconnected. The reason is the agent's own when it reported one (443-only, UDP blocked, ...), else
 * the hub's. Lines are written in the order of the changes.
 */
import type { Logger } from 'pino';
import type { RelayHooks } from '../control/model/hooks.js';
import type { ConnectionChange } from '../control/model/relay-events.js';
import type { Store } from '../control/store/types.js';

interface Logged {
  path: 'direct' | 'relayed';
  /** The reason last logged while relayed. */
  reason: string | null;
}

export interface AgentLogOptions {
  hooks: RelayHooks;
  store: Pick<Store, 'getCluster'>;
  log: Logger;
}

function lineOf(change: ConnectionChange, was: Logged | undefined): string {
  if (!change.connected || change.path === 'none') return 'agent disconnected';
  if (was === undefined) return 'agent connected';
  return change.path === 'direct' ? 'agent went direct' : 'agent went relayed';
}

async function reasonOf(o: AgentLogOptions, cluster: string): Promise<string | null> {
  const hub = o.hooks.connection(cluster).pathDetail?.reason ?? null;
  const agent = await o.store.getCluster(cluster).then(
    (c) => c?.agentReason ?? null,
    () => null,
  );
  return agent ?? hub;
}

/** Subscribes to the hooks for the life of the relay (the hooks' listeners are removed at close). */
export function logAgentChanges(o: AgentLogOptions): void {
  // What was last logged per cluster: bounded by the clusters with a session on this process.
  const logged = new Map<string, Logged>();
  let queue: Promise<void> = Promise.resolve();
  const later = (write: () => Promise<void> | void) => {
    queue = queue.then(write).catch(() => undefined);
  };
  o.hooks.on('connection-changed', (change) => {
    const { cluster } = change;
    const was = logged.get(cluster);
    const up = change.connected && change.path !== 'none';
    if (up ? was?.path === change.path : was === undefined) return;
    const line = lineOf(change, was);
    if (!up) {
      logged.delete(cluster);
      later(() => o.log.info({ cluster }, line));
    } else if (change.path === 'direct') {
      logged.set(cluster, { path: 'direct', reason: null });
      const remote = o.hooks.connection(cluster).pathDetail?.remote ?? null;
      later(() => o.log.info({ cluster, path: 'direct', remote }, line));
    } else {
      const state: Logged = { path: 'relayed', reason: null };
      logged.set(cluster, state);
      later(async () => {
        state.reason = await reasonOf(o, cluster);
        o.log.info({ cluster, path: 'relayed', reason: state.reason }, line);
      });
    }
  });
  o.hooks.on('agent-reason', ({ cluster, reason }) => {
    const state = logged.get(cluster);
    if (state?.path !== 'relayed' || reason === null) return;
    later(() => {
      if (logged.get(cluster) !== state || state.reason === reason) return;
      state.reason = reason;
      o.log.info({ cluster, path: 'relayed', reason }, 'agent relayed: the agent reports why');
    });
  });
}
