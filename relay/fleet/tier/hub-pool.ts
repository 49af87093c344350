/**
 * The hub replicas a relay-mode replica forwards to. Each heartbeat (replica-membership.ts) hands it the live
 * replicas; the hub ones (mode `hub`) are probed on /readyz (readyz-probe.ts, at most one probe in flight per
 * replica) and only those that answered 200 at their last probe are picked. A replica whose dial failed during a
 * forward is left out until its next good probe. Where an agent is comes from the same heartbeat (agent_sessions,
 * up to a second old); the hub replica that gets a request for an agent that moved sends it one more hop. While the
 * store does not answer, the last view and probe results stand (the hub replicas may well be serving).
 */

import type { AgentLocation, ReplicaRow } from '../../control/store/postgres-mesh.js';
import type { FleetView } from '../mesh/replica-membership.js';
import { probeReady } from './readyz-probe.js';

export interface HubPoolOptions {
  /** The fleet pin every hub replica's certificate must hash to. */
  caPin: string;
  /** Probe (tests may pass another); default probeReady. */
  probe?: (meshUrl: string, caPin: string) => Promise<boolean>;
}

interface HubState {
  row: ReplicaRow;
  ready: boolean;
  probing: boolean;
}

export class HubPool {
  readonly #caPin: string;
  readonly #probe: (meshUrl: string, caPin: string) => Promise<boolean>;
  /** By replica id; at most MAX_REPLICAS (the store's cap on replica rows). */
  #hubs = new Map<string, HubState>();
  /** Cluster -> a hub replica one of its agents is on. */
  #locations = new Map<string, AgentLocation>();
  #next = 0;

  constructor(o: HubPoolOptions) {
    this.#caPin = o.caPin;
    this.#probe = o.probe ?? probeReady;
  }

  /** A heartbeat's view: the live hub replicas (others dropped), then a probe of each. */
  update(view: FleetView): void {
    const hubs = new Map<string, HubState>();
    for (const row of view.replicas) {
      if (row.mode !== 'hub') continue;
      const known = this.#hubs.get(row.id);
      hubs.set(row.id, known ? { ...known, row } : { row, ready: false, probing: false });
    }
    this.#hubs = hubs;
    this.#locations = new Map(view.locations.map((l) => [l.cluster, l]));
    for (const state of hubs.values()) this.#probeOne(state);
  }

  #probeOne(state: HubState): void {
    if (state.probing) return;
    state.probing = true;
    void this.#probe(state.row.meshUrl, this.#caPin).then((ok) => {
      state.probing = false;
      state.ready = ok;
    });
  }

  /** Hub replicas live and ready now. */
  get readyCount(): number {
    let n = 0;
    for (const s of this.#hubs.values()) if (s.ready) n++;
    return n;
  }

  get liveCount(): number {
    return this.#hubs.size;
  }

  /** The next ready hub replica (round robin), or null when none is. */
  pick(): ReplicaRow | null {
    const ready = [...this.#hubs.values()].filter((s) => s.ready);
    if (ready.length === 0) return null;
    this.#next = (this.#next + 1) % ready.length;
    return ready[this.#next]!.row;
  }

  /** The ready hub replica holding the cluster's agent, else any ready one (null when none is). */
  pickFor(cluster: string | null): ReplicaRow | null {
    const l = cluster === null ? undefined : this.#locations.get(cluster);
    const holder = l === undefined ? undefined : this.#hubs.get(l.replica);
    return holder?.ready ? holder.row : this.pick();
  }

  /** A forward to this replica could not dial it: not picked until a probe answers again. */
  markFailed(id: string): void {
    const s = this.#hubs.get(id);
    if (s) s.ready = false;
  }
}
