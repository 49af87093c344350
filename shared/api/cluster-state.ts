/**
 * Where a cluster stands, in one word, from the hub's live view of its agents' sessions
 * (relay/control/model/cluster-state.ts says how it is chosen).
 */
import { type Static, Type } from '@sinclair/typebox';

export const CLUSTER_STATES = ['Connected', 'Degraded', 'Disconnected', 'Never connected'] as const;

export const ClusterState = Type.Union(CLUSTER_STATES.map((state) => Type.Literal(state)));
export type ClusterState = Static<typeof ClusterState>;
