/** What every route plugin is given: the store, clock, config, hooks and helpers. */

import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Cluster, ClusterAgent, ClusterDetail } from '../../shared/api/cluster.js';
import { kubeFactsOf } from '../../shared/api/kube-facts.js';
import type { RelayNetwork } from '../../shared/api/network.js';
import type { Tunnel } from '../../shared/api/tunnel.js';
import type { Clock } from '../../shared/clock.js';
import { keyToBase64 } from '../../shared/keys.js';
import { packageVersion } from '../../shared/kit/cli/version.js';
import { isOlderVersion } from '../../shared/kit/version-compare.js';
import { authenticate, bearerToken, type Principal } from '../control/model/auth.js';
import { clusterState } from '../control/model/cluster-state.js';
import { availableCondition, joinedCondition } from '../control/model/conditions.js';
import { type ConnectionPathDetail, NO_CONNECTION } from '../control/model/connection-status.js';
import type { RelayHooks } from '../control/model/hooks.js';
import type { ReservedKeys } from '../control/model/reserved-keys.js';
import { HUB_ADDRESS } from '../control/store/addresses.js';
import { PATH_REPORT_STALE_MS } from '../control/store/agent-path-row.js';
import { type ClusterAgentRecord, registeredAgents } from '../control/store/agent-replicas.js';
import { type HubPathDetail, withReason } from '../control/store/path-reason.js';
import type { PskSummary } from '../control/store/psk-refusal.js';
import type { AgentPathRecord, AuditEntry, ClusterRecord, Store } from '../control/store/types.js';
import type { HubUdp } from '../data/udp/hub-udp.js';
import type { DrainState } from '../fleet/drain.js';
import type { MeshNode } from '../fleet/mesh/mesh-node.js';
import { requestSource } from '../fleet/mesh/mesh-source.js';
import type { RelayConfig } from '../ops/config/config.js';
import type { FailureLimits } from '../ops/failure-limits.js';
import type { Metrics } from '../ops/metrics.js';
import type { FailureLimiter } from '../ops/rate-limit.js';

export interface RelayContext {
  store: Store;
  clock: Clock;
  config: RelayConfig;
  hooks: RelayHooks;
  log: Logger;
  metrics: Metrics;
  /** Failed registrations by source (relay/control/api/registration-limit.ts). */
  /** Failed registrations by source: in memory, or shared by the replicas of a PostgreSQL store. */
  limiter: {
    bySource: FailureLimits;
    /** Kubeconfigs minted by each access key (relay/control/api/kubeconfig-mint-limit.ts), in this process. */
    kubeconfigMints: FailureLimiter;
  };
  hubPublicKey: Buffer;
  /** Keys no agent may register and the DERP server never disconnects (the hub's own). */
  reservedKeys: ReservedKeys;
  /** Trust advertised in join commands and kubeconfigs; null = none (plain-http without --public-ca-file). */
  caPin: string | null;
  caPem: string | null;
  /** The URL agents use; fixed once the server listens. */
  publicUrl(): string;
  /** Set on SIGTERM: /readyz fails, new agents are refused, in-flight work is waited for (drain.ts). */
  drain: DrainState;
  /** The hub's WireGuard UDP port (`--udp-port`); absent or null when off. */
  udp?: HubUdp | null;
  /** This replica's place in a fleet's mesh (relay/fleet/mesh/); absent or null without --mesh-key-file. */
  mesh?: MeshNode | null;
}

export function principalOf(ctx: RelayContext, req: FastifyRequest, allowQuery = false): Promise<Principal> {
  return authenticate(ctx.store, bearerToken(req, allowQuery), ctx.clock.wallNow());
}

/**
 * The client's address a request is counted and logged under: the connection's peer, or on a request another
 * replica of the fleet forwarded with the mesh key, the client address it names (relay/fleet/mesh/mesh-source.ts).
 */
export function clientAddress(ctx: Pick<RelayContext, 'mesh'>, req: FastifyRequest): string {
  return requestSource(ctx.mesh?.key ?? null, req.raw) ?? req.ip;
}

/** An audit row for this request; the route passes it to the store and, once the change happened, to logAudit. */
export function auditEntry(
  ctx: RelayContext,
  req: FastifyRequest,
  actor: string,
  action: string,
  target: string,
  detail: Record<string, unknown> = {},
): AuditEntry {
  return { at: ctx.clock.wallNow(), actor, action, target, source: clientAddress(ctx, req), detail };
}

/** The structured log line of an audit entry (who, what, when, from where). */
export function logAudit(ctx: RelayContext, e: AuditEntry): void {
  ctx.log.info({ audit: { ...e, at: new Date(e.at).toISOString() } }, `audit ${e.action} ${e.target}`);
}

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What a cluster's view reads besides its record: the live status, the clock and the lease duration. */
export type ViewContext = Pick<RelayContext, 'hooks' | 'clock' | 'config'>;

function pathDetailView(d: ConnectionPathDetail): HubPathDetail {
  return { ...d, lastSwitch: isoOrNull(d.lastSwitch) };
}

/** The details the replica holding the agent's session last wrote, while fresh (relay/control/model/path-reports.ts). */
function storedDetail(ctx: ViewContext, reported: AgentPathRecord | undefined): HubPathDetail | null {
  if (!reported || reported.path === 'none') return null;
  if (ctx.clock.wallNow() - reported.reportedAt >= PATH_REPORT_STALE_MS) return null;
  return pathDetailView({
    remote: reported.remote,
    rttDirectMs: reported.rttDirectMs,
    rttRelayedMs: reported.rttRelayedMs,
    lastSwitch: reported.lastSwitchAt,
    reason: reported.reason,
  });
}

/**
 * Connected, path and its details: this relay's hub's own view while it holds the agent's session, else what
 * the replica holding it last wrote to the store (`reported`, while fresh). In a fleet with a mesh, the live
 * status already names the session another live replica holds (relay/fleet/mesh/), and the details come from that
 * replica's report; one that no live replica holds (its replica was killed) is not connected, whatever a report
 * written before says, as the proxies answer for it (503 AGENT_NOT_CONNECTED). Without a mesh, a fresh report
 * is all a replica knows of another's session.
 */
function hubPathView(
  ctx: ViewContext,
  c: ClusterRecord,
  reported: AgentPathRecord | undefined,
): { connected: boolean; path: string; pathDetail: HubPathDetail | null } {
  const live = ctx.hooks.connection(c.name);
  if (live.connected && live.pathDetail)
    return { connected: true, path: live.path, pathDetail: pathDetailView(live.pathDetail) };
  const stored = c.publicKey === null ? null : storedDetail(ctx, reported);
  if (live.connected) {
    // Held by another live replica: its report says which path and why.
    return { connected: true, path: stored && reported ? reported.path : live.path, pathDetail: stored };
  }
  if (!stored || !reported || ctx.config.mesh.key !== null)
    return { connected: false, path: live.path, pathDetail: null };
  return { connected: true, path: reported.path, pathDetail: stored };
}

/** The hub's view, with the reason the agent reported first (relay/control/store/path-reason.ts). */
function pathView(
  ctx: ViewContext,
  c: ClusterRecord,
  reported: AgentPathRecord | undefined,
): Pick<Cluster, 'connected' | 'path' | 'pathDetail'> {
  const v = hubPathView(ctx, c, reported);
  return { ...v, pathDetail: withReason(v, v.pathDetail, c.agentReason) };
}

/**
 * The API form of a cluster; `reported`: its agent's path as the store has it (GET routes pass it); `agents`: its
 * agents (Store.listAgents), shown one by one when given.
 */
export function clusterView(
  ctx: ViewContext,
  c: ClusterRecord,
  reported?: AgentPathRecord,
  agents?: readonly ClusterAgentRecord[],
): Cluster {
  const live = ctx.hooks.connection(c.name);
  const path = pathView(ctx, c, reported);
  const registered = registeredAgents(c);
  const connected = connectedAgents(ctx, c, path.connected);
  return {
    name: c.name,
    group: c.group,
    displayName: c.displayName,
    status: c.status,
    conditions: [
      joinedCondition(c),
      availableCondition(c, ctx.clock.wallNow(), ctx.config.leaseDurationSeconds),
    ],
    state: clusterState({
      agents: registered,
      connected,
      everSeen: live.lastHandshake !== null || c.leaseRenewAt !== null || reported !== undefined,
    }),
    ...path,
    agentReplicas: c.agentReplicas,
    agentsRegistered: registered,
    agentsConnected: connected,
    ...(agents === undefined ? {} : { agents: agents.map((a) => agentView(ctx, a)) }),
    agentVersion: c.agentVersion,
    agentOutdated: c.agentVersion !== null && isOlderVersion(c.agentVersion, packageVersion()),
    publicKey: c.publicKey,
    address: c.address,
    claims: c.claims,
    ...kubeFactsOf(c.claims),
    leaseRenewTime: isoOrNull(c.leaseRenewAt),
    lastHandshake: isoOrNull(live.lastHandshake),
    rttMs: live.rttMs,
    bytesIn: live.bytesIn,
    bytesOut: live.bytesOut,
    createdAt: new Date(c.createdAt).toISOString(),
  };
}

/**
 * How many of the cluster's agents have a live session: this process's view of each agent, at least one while the
 * cluster shows connected (a fleet's other replica holds the session), at most those registered.
 */
function connectedAgents(ctx: ViewContext, c: ClusterRecord, connected: boolean): number {
  let n = 0;
  for (const s of ctx.hooks.agentConnections(c.name).values()) if (s.connected) n++;
  if (connected) n = Math.max(n, 1);
  return Math.min(n, registeredAgents(c));
}

/** One agent's view: its registration and lease from the store, its session from this process's hub. */
function agentView(ctx: ViewContext, a: ClusterAgentRecord): ClusterAgent {
  const live = ctx.hooks.agentConnections(a.cluster).get(a.publicKey) ?? NO_CONNECTION;
  const seen = live.lastHandshake !== null || a.leaseRenewAt !== null;
  return {
    publicKey: a.publicKey,
    address: a.address,
    agentVersion: a.agentVersion,
    primary: a.primary,
    state: clusterState({ agents: 1, connected: live.connected ? 1 : 0, everSeen: seen }),
    connected: live.connected,
    path: live.path,
    rttMs: live.rttMs,
    lastHandshake: isoOrNull(live.lastHandshake),
    leaseRenewTime: isoOrNull(a.leaseRenewAt),
  };
}

/** The PSK summary as it stands at `nowWall`: an unused PSK turns expired at its expiry without a store write. */
export function pskAt(psk: PskSummary | null, nowWall: number): PskSummary | null {
  if (psk === null || psk.state !== 'unused' || psk.expiresAt > nowWall) return psk;
  return { ...psk, state: 'expired' };
}

export function clusterDetailView(
  ctx: ViewContext,
  c: ClusterRecord,
  psk: PskSummary | null,
  reported?: AgentPathRecord,
  impersonation?: boolean,
  agents?: readonly ClusterAgentRecord[],
): ClusterDetail {
  const current = pskAt(psk, ctx.clock.wallNow());
  const bootstrapPsk = current && {
    state: current.state,
    expiresAt: new Date(current.expiresAt).toISOString(),
    usedAt: isoOrNull(current.usedAt),
  };
  const view = { ...clusterView(ctx, c, reported, agents), bootstrapPsk };
  return impersonation === undefined ? view : { ...view, impersonation: impersonation ? 'on' : 'off' };
}

/** Where agents connect: the DERP URL, the hub's UDP endpoint and the STUN responder (null when not served). */
export function relayEndpoints(ctx: RelayContext): RelayNetwork {
  const url = new URL(ctx.publicUrl());
  return {
    derpUrl: `wss://${url.host}${url.pathname.replace(/\/$/, '')}/derp`,
    udpEndpoint: ctx.udp?.advertised(ctx.publicUrl()) ?? null,
    stunEndpoint: ctx.config.stunPort === null ? null : `${url.hostname}:${ctx.config.stunPort}`,
  };
}

/** The data-plane parameters for an accepted, registered cluster; null otherwise. */
export function tunnelView(ctx: RelayContext, c: ClusterRecord): Tunnel | null {
  if (c.status !== 'Accepted' || c.address === null || c.presharedKey === null) return null;
  return {
    hubPublicKey: keyToBase64(ctx.hubPublicKey),
    presharedKey: c.presharedKey,
    address: `${c.address}/32`,
    hubAddress: HUB_ADDRESS,
    relayUrl: ctx.publicUrl(),
    ...relayEndpoints(ctx),
  };
}
