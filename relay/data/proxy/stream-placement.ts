/**
 * Which agent of a cluster a new hub stream goes to (a cluster of agent replicas has several:
 * relay/control/store/agent-replicas.ts): one whose session is live and that does not drain, the one with the
 * fewest open streams, ties taken in turn (round robin) so idle agents share the requests. With none live and not
 * draining: a draining one (the open waits for its next run, agent-drains.ts), else the first (the open then fails
 * AGENT_NOT_CONNECTED naming the cluster). Turns are kept for at most MAX_PLACEMENT_CLUSTERS clusters.
 */

export const MAX_PLACEMENT_CLUSTERS = 10_000;

export interface PlacementCandidate {
  readonly publicKey: string;
  readonly address: string;
}

export interface PlacementView<C extends PlacementCandidate> {
  isLive(c: C): boolean;
  isDraining(c: C): boolean;
  openStreams(c: C): number;
}

export class StreamPlacement {
  readonly #turn = new Map<string, number>();

  /** The agent for the next stream of `cluster`, or null when it has no candidate. */
  pick<C extends PlacementCandidate>(
    cluster: string,
    candidates: readonly C[],
    view: PlacementView<C>,
  ): C | null {
    if (candidates.length <= 1) return candidates[0] ?? null;
    const ready = candidates.filter((c) => view.isLive(c) && !view.isDraining(c));
    if (ready.length === 0) return candidates.find((c) => view.isDraining(c)) ?? candidates[0]!;
    const fewest = Math.min(...ready.map((c) => view.openStreams(c)));
    const least = ready.filter((c) => view.openStreams(c) === fewest);
    const turn = this.#nextTurn(cluster);
    return least[turn % least.length]!;
  }

  /** Forgets the cluster's turn (deleted). */
  forget(cluster: string): void {
    this.#turn.delete(cluster);
  }

  #nextTurn(cluster: string): number {
    const turn = this.#turn.get(cluster) ?? 0;
    if (!this.#turn.has(cluster) && this.#turn.size >= MAX_PLACEMENT_CLUSTERS) this.#turn.clear();
    this.#turn.set(cluster, (turn + 1) % 1_000_000);
    return turn;
  }
}
