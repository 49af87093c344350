/**
 * Which agents this hub answers over its UDP port (`--udp-port`). In a fleet of replicas every replica holds
 * the fleet's hub key and every accepted agent as a peer, but exactly one replica holds an agent's WireGuard
 * session: the one its relay connection (DERP over WebSocket) is on. Only that replica answers the agent's disco
 * pings and handshakes over UDP; any other replica drops them (`not-owner`, counted by the device and by disco),
 * so an agent can never hold a direct path to a replica its relay connection is not on.
 *
 * An agent that speaks disco (the tunnel-client) is owned only through its relay connection. A stock WireGuard
 * peer has no relay connection: the replica that holds its session (the store's agent location, as the mesh
 * last read it) answers it, and any replica while none does. A single relay (no fleet) answers every peer.
 */

/** What the fleet's mesh says about other replicas' sessions (relay/control/model/hooks.ts). */
export interface FleetSessions {
  /** Another live replica holds the cluster's agent session. */
  heldElsewhere(cluster: string): boolean;
}

export interface SessionOwnerOptions {
  /** The agent's relay connection is on this replica (the DERP server's). */
  relayConnected(key: Buffer): boolean;
  /** A disco message of the agent's was accepted (it is an agent, not a stock WireGuard peer). */
  speaksDisco(key: Buffer): boolean;
  /** The agent's cluster, or undefined for a key the hub does not hold. */
  clusterOf(key: Buffer): string | undefined;
  fleet: FleetSessions;
}

export class SessionOwner {
  readonly #options: SessionOwnerOptions;

  constructor(o: SessionOwnerOptions) {
    this.#options = o;
  }

  /** Whether this replica answers the agent with this key over UDP now. */
  answers(key: Buffer): boolean {
    const o = this.#options;
    if (o.relayConnected(key)) return true;
    if (o.speaksDisco(key)) return false;
    const cluster = o.clusterOf(key);
    return cluster !== undefined && !o.fleet.heldElsewhere(cluster);
  }
}
