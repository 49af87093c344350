/**
 * Mounts the data plane on a relay: the DERP server at `GET /derp` (WebSocket upgrade, subprotocol
 * `derp`) on the same https server Fastify uses, and the hub node behind the DERP server's in-process
 * client. Wiring:
 * - Admission: the key is registered to an Accepted cluster (RelayHooks.isAdmitted), or is the hub's.
 * - Policy: agent <-> hub node only; anything else (agent -> agent) is dropped and counted (`policy`).
 * - cluster-deleted / cluster-denied / agent-unjoined: the key's DERP connection is closed at once and
 *   the hub removes its peer; deny also reports the cluster disconnected (delete and unjoin forget it).
 * - Start: every accepted agent in the store becomes a hub peer (up to the device's maxPeers); so does
 *   every agent admitted later (peer-admitted), so that a stock WireGuard peer on the UDP port, which sends
 *   no DERP datagram the hub could look its key up by, is known.
 * - UDP: the hub's endpoint takes the datagrams of the hub's UDP port (relay/data/udp/hub-udp.ts) while mounted.
 * - Candidates: the hub's endpoint gathers them for the UDP port (shared/net/tunnel-endpoint/endpoint-candidates.ts):
 *   `--udp-public-endpoint`, the hub's interface addresses with the port, and with `--stun-server` its mapped address
 *   behind NAT (asked through the UDP port), offered to the agents in call-me-maybe; STUN's verdict (a mapping that
 *   varies per destination) is the hub's condition for every peer.
 * - Drain (SIGTERM, RunningRelay.drain): no new agent is admitted (503 CLOSED) while the connected ones stay
 *   until the hub's streams are done; then the drain closes the data plane as below (the HTTP server stays).
 * - Close (fastify preClose, i.e. RunningRelay.close and the end of a drain): clients get the Restarting
 *   frame (reconnect within a jittered window, relay/data/derp/limits.ts), then their sockets close; the hub node
 *   stops.
 * - Metrics: the DERP server's and the hub's counters are exported on /metrics (data-plane-metrics.ts),
 *   read at scrape time.
 * Mounted by the hub's proxy plugin (relay/data/proxy/proxy-plugin.ts), which the tunnel-relay binary uses.
 */

import type { FastifyInstance } from 'fastify';
import { keyToBase64 } from '../../../shared/keys.js';
import type { StunServer } from '../../../shared/net/disco/candidates.js';
import { resolveEndpoint } from '../../../shared/net/disco/resolve-endpoint.js';
import type { RelayContext } from '../../context/context.js';
import type { AdmittedPeer } from '../../control/model/admission.js';
import { PathReports } from '../../control/model/path-reports.js';
import type { KeyEvent } from '../../control/model/relay-events.js';
import { meshHeaderRefusal } from '../../fleet/mesh/mesh-screen.js';
import { requestSource } from '../../fleet/mesh/mesh-source.js';
import type { RelayConfig } from '../../ops/config/config.js';
import { loadHubKey } from '../../ops/hub-key.js';
import type { DerpLimits } from '../derp/limits.js';
import { createDerpServer, type DerpServer, type DerpServerOptions } from '../derp/server.js';
import {
  HUB_DEFAULT_MAX_PEERS,
  HubNode,
  type HubNodeOptions,
  type HubStatusSettings,
} from '../hub/hub-node.js';
import { discoFamilies, hubUdpFamilies } from '../udp/udp-metrics.js';
import { derpFamilies, HubMetrics } from './data-plane-metrics.js';

export interface DataPlaneOptions {
  /** Test hook: every payload the DERP server routes (views: copy to keep). */
  onPacket?: DerpServerOptions['onPacket'];
  derpLimits?: Partial<DerpLimits>;
  /** Hub node settings (timers, status intervals, maxPeers, stream binding tuning, onInnerPacket). */
  hub?: Partial<
    Pick<HubNodeOptions, 'onInnerPacket' | 'maxPeers' | 'timers' | 'streams'> & {
      status: Omit<HubStatusSettings, 'onStatus'>;
    }
  >;
}

export interface DataPlane {
  readonly derp: DerpServer;
  readonly hub: HubNode;
  close(): Promise<void>;
}

const mounted = new WeakMap<object, DataPlane>();

/**
 * The DERP limits the relay's configuration sets. Behind `--plain-http` every connection comes from the TLS
 * terminator, so the per-source handshake cap would cap the terminator: it is lifted there (the table-wide cap
 * and its eviction still apply).
 */
function configuredDerpLimits(config: RelayConfig): Partial<DerpLimits> {
  const maxHandshaking = config.derpMaxHandshakes;
  // No key at all without --plain-http: the limits are merged over DEFAULT_DERP_LIMITS, where an undefined would
  // replace the default.
  return config.plainHttp
    ? { maxHandshaking, maxHandshakingPerSource: Number.POSITIVE_INFINITY }
    : { maxHandshaking };
}

/** The data plane mounted on `app` (for plugins registered after it, e.g. the hub's proxies). */
export function dataPlaneOf(app: FastifyInstance): DataPlane | undefined {
  return mounted.get(app);
}

/** `--stun-server` endpoints as addresses; a name that does not resolve is left out with a warning. */
async function resolveStunServers(
  list: readonly string[],
  log: { warn(obj: object, msg: string): void },
): Promise<StunServer[]> {
  const out: StunServer[] = [];
  for (const endpoint of list) {
    const server = await resolveEndpoint(endpoint);
    if (server) out.push(server);
    else log.warn({ stunServer: endpoint }, 'hub: --stun-server does not resolve; not asked');
  }
  return out;
}

/** Builds the data plane for a relay context and mounts it on `app`'s https server. */
export async function mountDataPlane(
  app: FastifyInstance,
  ctx: RelayContext,
  opts: DataPlaneOptions = {},
): Promise<DataPlane> {
  const hubKey = loadHubKey(ctx.config);
  if (!hubKey.publicKey.equals(ctx.hubPublicKey)) {
    throw new Error('hub key in the data dir changed under the running relay');
  }
  const hubPub = hubKey.publicKey;
  const log = ctx.log.child({ component: 'data-plane' });
  const derp = createDerpServer({
    keyPair: hubKey,
    clock: ctx.clock,
    admission: {
      isAdmitted: (k) => k.equals(hubPub) || ctx.hooks.isAdmitted(k),
    },
    policy: { canSend: (src, dst) => src.equals(hubPub) || dst.equals(hubPub) },
    reservedKeys: ctx.reservedKeys,
    sourceOf: (req) => requestSource(ctx.mesh?.key ?? null, req),
    refusal: (req) => meshHeaderRefusal(ctx, req),
    logger: log,
    onPacket: opts.onPacket,
    limits: { ...configuredDerpLimits(ctx.config), ...opts.derpLimits },
  });
  const pathReports = new PathReports({
    store: ctx.store,
    clock: ctx.clock,
    maxAgents: opts.hub?.maxPeers ?? HUB_DEFAULT_MAX_PEERS,
    log: (obj, msg) => log.warn(obj, msg),
  });
  const hub: HubNode = new HubNode({
    privateKey: hubKey.privateKey,
    derp,
    clock: ctx.clock,
    lookup: async (k) => {
      const p = await ctx.hooks.admittedPeer(k);
      // The hub adds the peer when this resolves: watch its handshakes from then on.
      if (p) setImmediate(() => watchAgent(p.publicKey));
      return p;
    },
    // Disco with every agent: with no UDP port it paces the agents' probes and measures the relayed RTT.
    disco: {},
    udp: ctx.udp?.transport,
    // A replica of a fleet answers over UDP only the agents whose session it holds (hub/session-owner.ts).
    fleet: ctx.mesh ? { heldElsewhere: (cluster) => ctx.hooks.heldElsewhere(cluster) } : undefined,
    log: (obj, msg) => log.warn(obj, msg),
    ...opts.hub,
    status: {
      ...opts.hub?.status,
      onStatus: (cluster, s, key) => {
        ctx.hooks.updateConnection(cluster, s, keyToBase64(key));
        // The cluster's path (its agents' together: the first connected one's), so agent replicas on different
        // paths do not take turns in the store's report and history.
        pathReports.note(cluster, ctx.hooks.localConnection(cluster));
      },
    },
  });
  // The lookup above runs on a datagram (after attach()), so hubMetrics is set by then.
  const hubMetrics = new HubMetrics(hub);
  function watchAgent(publicKey: string): void {
    const peer = hub.agent(publicKey)?.peer;
    if (peer) hubMetrics.watch(peer);
  }
  let skipped = 0;
  for (const c of await ctx.store.listClusters()) {
    if (c.status !== 'Accepted' || !c.publicKey || !c.address || !c.presharedKey) continue;
    if (ctx.reservedKeys.has(c.publicKey)) {
      log.warn(
        { cluster: c.name, publicKey: c.publicKey },
        "hub: cluster holds the hub's reserved key; skipped",
      );
      continue;
    }
    if (hub.full) skipped++;
    else if (
      hub.addAgent({
        cluster: c.name,
        publicKey: c.publicKey,
        address: c.address,
        presharedKey: c.presharedKey,
      })
    )
      watchAgent(c.publicKey);
  }
  if (skipped > 0) log.warn({ skipped }, 'hub: peer cap reached; accepted agents left out at start');

  const revoke = (why: string, report: boolean) => (e: KeyEvent) => {
    const key = Buffer.from(e.publicKey, 'base64');
    derp.closeClient(key, why);
    hubMetrics.retire(e.publicKey);
    hub.removeAgent(e.publicKey);
    pathReports.forget(e.cluster);
    if (report)
      ctx.hooks.updateConnection(e.cluster, { connected: false, path: 'none', rttMs: null }, e.publicKey);
    else ctx.hooks.forgetAgent(e.cluster, e.publicKey);
  };
  const onAdmitted = (p: AdmittedPeer) => {
    if (!ctx.reservedKeys.has(p.publicKey) && hub.addAgent(p)) watchAgent(p.publicKey);
  };
  const onDeleted = revoke('cluster deleted', false);
  const onDenied = revoke('cluster denied', true);
  const onUnjoined = revoke('agent unjoined', false);
  ctx.hooks.on('peer-admitted', onAdmitted);
  ctx.hooks.on('cluster-deleted', onDeleted);
  ctx.hooks.on('cluster-denied', onDenied);
  ctx.hooks.on('agent-unjoined', onUnjoined);
  const detach = derp.attach(app.server);
  const offDrain = ctx.drain.onStart(() => derp.stopAdmitting());
  const offMove = ctx.drain.onMove(() => dp.close());
  const udp = ctx.udp ?? null;
  if (udp) {
    const stunServers = await resolveStunServers(ctx.config.stunServers, log);
    // The hub's endpoint gathers the port's candidates (shared/net/tunnel-endpoint/endpoint-candidates.ts): its
    // interface addresses, `--udp-public-endpoint` (in a fleet each replica names only its own) and with
    // `--stun-server` its mapped address; never probed when an agent names them: the port's own addresses.
    udp.attach(hub.endpoint, {
      stunServers,
      publicCandidate: await udp.publicCandidate(),
      ownAddresses: await udp.ownAddresses(ctx.publicUrl()),
      onChange: (g) => {
        if (stunServers.length > 0)
          log.info({ stun: g.stun, reflexive: g.reflexive }, 'hub: address from STUN changed');
      },
    });
    log.info({ host: udp.transport.address, port: udp.transport.port }, 'WireGuard UDP port listening (udp)');
  }
  const removeCollector = ctx.metrics.addCollector(() => [
    ...derpFamilies(derp.stats),
    ...hubMetrics.families(),
    ...(udp ? hubUdpFamilies(udp.stats, hub.endpoint.direct) : []),
    ...(hub.endpoint.disco ? discoFamilies(hub.endpoint.disco) : []),
  ]);

  let closing: Promise<void> | null = null;
  const dp: DataPlane = {
    derp,
    hub,
    close() {
      closing ??= (async () => {
        ctx.hooks.off('peer-admitted', onAdmitted);
        ctx.hooks.off('cluster-deleted', onDeleted);
        ctx.hooks.off('cluster-denied', onDenied);
        ctx.hooks.off('agent-unjoined', onUnjoined);
        offDrain();
        offMove();
        udp?.detach();
        removeCollector();
        await derp.shutdown();
        hub.close();
      })();
      return closing;
    },
  };
  app.addHook('preClose', async () => {
    await dp.close();
    // Only now: a drain closes the data plane earlier, and /derp must still be answered (503) until the port closes.
    detach();
  });
  mounted.set(app, dp);
  return dp;
}
