/**
 * A cluster as the API shows it (GET /api/v1/clusters, GET /api/v1/clusters/NAME, the events feed): the relay builds
 * it (relay/context/context.ts clusterView) and the console reads it.
 */
import { type Static, Type } from '@sinclair/typebox';
import { ClusterState } from './cluster-state.js';
import { ClusterStatus } from './cluster-status.js';
import { Condition } from './condition.js';
import { PathDetail } from './path-detail.js';
import { closed, Nullable } from './schema-parts.js';

/** The state of a cluster's current bootstrap PSK (never the PSK itself). */
export const PskState = Type.Object(
  {
    state: Type.Union([
      Type.Literal('unused'),
      Type.Literal('used'),
      Type.Literal('expired'),
      Type.Literal('revoked'),
    ]),
    expiresAt: Type.String(),
    usedAt: Nullable(Type.String()),
  },
  closed,
);
export type PskState = Static<typeof PskState>;

/** One agent of a cluster (a cluster of agent replicas has several), as GET /clusters/NAME shows it. */
export const ClusterAgent = Type.Object(
  {
    publicKey: Type.String(),
    address: Nullable(Type.String()),
    agentVersion: Nullable(Type.String()),
    /** The agent that registered first (the cluster's own publicKey, address and lease are its). */
    primary: Type.Boolean(),
    /** Connected / Disconnected / Never connected, from its live session. */
    state: ClusterState,
    connected: Type.Boolean(),
    path: Type.String(),
    rttMs: Nullable(Type.Number()),
    lastHandshake: Nullable(Type.String()),
    leaseRenewTime: Nullable(Type.String()),
  },
  closed,
);
export type ClusterAgent = Static<typeof ClusterAgent>;

export const Cluster = Type.Object(
  {
    name: Type.String(),
    group: Type.String(),
    displayName: Type.String(),
    status: ClusterStatus,
    conditions: Type.Array(Condition),
    /** Connected / Degraded / Disconnected / Never connected, from the live sessions. */
    state: ClusterState,
    /** True while any agent of the cluster has a live session. */
    connected: Type.Boolean(),
    /** Agent keys the cluster's PSK admits (`cluster create --agent-replicas`). */
    agentReplicas: Type.Number(),
    /** Agents registered, and of those connected now (the state is Degraded while only some are). */
    agentsRegistered: Type.Number(),
    agentsConnected: Type.Number(),
    /** Only on GET /clusters/NAME and the events feed: each agent, the primary first. */
    agents: Type.Optional(Type.Array(ClusterAgent)),
    path: Type.String(),
    /** While connected: the path's details (remote, RTT of each path, last switch, why not direct). */
    pathDetail: Nullable(PathDetail),
    agentVersion: Nullable(Type.String()),
    /** The agent reported an older release than this relay's (upgrade it); false when newer, equal or unknown. */
    agentOutdated: Type.Boolean(),
    publicKey: Nullable(Type.String()),
    address: Nullable(Type.String()),
    claims: Type.Record(Type.String(), Type.String()),
    /** The claim `kubernetes.version` when it reads as a version (shared/api/kube-facts.ts), else null. */
    kubernetesVersion: Nullable(Type.String()),
    /** The claim `kubernetes.nodes` when it is a whole number, else null. */
    nodeCount: Nullable(Type.Integer({ minimum: 0 })),
    leaseRenewTime: Nullable(Type.String()),
    lastHandshake: Nullable(Type.String()),
    rttMs: Nullable(Type.Number()),
    bytesIn: Type.Number(),
    bytesOut: Type.Number(),
    createdAt: Type.String(),
    /** Only on GET /clusters/NAME: whether the agent acts as the caller (impersonation) or as itself there. */
    impersonation: Type.Optional(Type.Union([Type.Literal('on'), Type.Literal('off')])),
    /** Only on GET /clusters/NAME and the events feed: the current bootstrap PSK's state, null when it has none. */
    bootstrapPsk: Type.Optional(Nullable(PskState)),
  },
  closed,
);
export type Cluster = Static<typeof Cluster>;

/** GET /api/v1/clusters/NAME (and each event of GET /api/v1/events): the cluster with its current PSK's state. */
export type ClusterDetail = Cluster & { bootstrapPsk: PskState | null };

/** DELETE /api/v1/clusters/NAME's answer. */
export const Deleted = Type.Object({ deleted: Type.String() }, closed);
export type Deleted = Static<typeof Deleted>;
