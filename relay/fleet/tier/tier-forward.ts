/**
 * A relay-mode replica's forwarding: everything but its own /healthz, /readyz and /metrics goes one hop over the
 * mesh to a hub replica (tier-route.ts picks which), as mesh-forward.ts does between hub replicas, with the mesh
 * key, the client's address and `tunnel-mesh-via: relay` (mesh-source.ts):
 *   /derp (the agents' WebSocket)  the upgrade request is re-sent and the bytes spliced both ways, so the DERP
 *                                  handshake (signed by the hub key) and everything in it stay end to end between
 *                                  the agent and the hub replica; this replica sees DERP frames of ciphertext.
 *   CONNECT, other Upgrades        request head re-sent, then bytes spliced (the hub replica's answer unchanged).
 *   plain requests                 re-sent with their body framed as it arrived, the answer streamed back.
 * The hub replica authenticates the caller. A request carrying a mesh key header is refused: nothing dials a
 * relay-mode replica as a mesh peer. While draining, new /derp upgrades get 503 CLOSED; moving the agents
 * (DrainState.onMove) ends the /derp pass-throughs, and the agents reconnect through the balancer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { TunnelError } from '../../../shared/errors.js';
import type { ReplicaRow } from '../../control/store/postgres-mesh.js';
import { asTunnelError, proxyStatus, writeErrorResponse } from '../../data/proxy/raw-response.js';
import type { MeshKey } from '../../ops/config/mesh-settings.js';
import { peerAddress } from '../../ops/http/source-address.js';
import type { DrainState } from '../drain.js';
import { MESH_KEY_HEADER, VIA_RELAY } from '../mesh/mesh-auth.js';
import { dialReplica } from '../mesh/mesh-dial.js';
import { forwardConnect, forwardRequest, forwardUpgrade, type MeshHop } from '../mesh/mesh-forward.js';
import { meshHeaders } from '../mesh/mesh-source.js';
import type { HubPool } from './hub-pool.js';
import { hubFor } from './tier-route.js';
import type { TierStats } from './tier-stats.js';

export interface TierForwardOptions {
  pool: HubPool;
  key: MeshKey;
  caPin: string;
  drain: DrainState;
  log: Logger;
  stats: TierStats;
}

/** A relay-mode replica's answer to any request carrying the mesh key header: nothing dials it as a mesh peer. */
function noMeshRequests(): TunnelError {
  return new TunnelError(
    'MESH_UNAUTHENTICATED',
    `a relay-mode replica takes no mesh requests; remove the ${MESH_KEY_HEADER} header`,
  );
}

/** Paths this replica answers itself. */
const LOCAL_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export class TierForwarder {
  readonly #pool: HubPool;
  readonly #key: MeshKey;
  readonly #caPin: string;
  readonly #drain: DrainState;
  readonly #log: Logger;
  readonly #stats: TierStats;
  /** The agents' /derp pass-throughs (client side), ended when the drain moves the agents. */
  readonly #agents = new Set<Duplex>();
  /** Every CONNECT and Upgrade pass-through (client side), /derp included: cut when the server closes. */
  readonly #tunnels = new Set<Duplex>();
  /** Forwarded requests other than /derp in flight (the drain waits for them). */
  #inFlight = 0;

  constructor(options: TierForwardOptions) {
    this.#pool = options.pool;
    this.#key = options.key;
    this.#caPin = options.caPin;
    this.#drain = options.drain;
    this.#log = options.log;
    this.#stats = options.stats;
    options.drain.track({ name: 'forwarded requests', count: () => this.#inFlight });
    options.drain.onMove(() => this.#endAgents());
  }

  /** /derp pass-throughs open now. */
  get agents(): number {
    return this.#agents.size;
  }

  /**
   * Takes 'connect' and 'upgrade' on the server, and every request to a path not answered here; when the server
   * closes, the tunnels still open are cut (the drain waited for them first).
   */
  attach(app: FastifyInstance): void {
    const onConnect = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      this.#drain.noteActivity();
      this.#raw(req, socket, () => forwardConnect(this.#hop(req), req, { socket, head }), true);
    };
    const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      this.#drain.noteActivity();
      const derp = (req.url ?? '').split('?', 1)[0] === '/derp';
      if (derp && this.#drain.draining) {
        writeErrorResponse(socket, 503, new TunnelError('CLOSED', 'relay is shutting down'));
        return;
      }
      if (derp) this.#holdAgent(socket);
      this.#raw(req, socket, () => forwardUpgrade(this.#hop(req), req, { socket, head }), !derp);
    };
    app.server.on('connect', onConnect);
    app.server.on('upgrade', onUpgrade);
    const onRequest = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      if (LOCAL_PATHS.has((request.raw.url ?? '').split('?', 1)[0] ?? '')) {
        // Refused here too, so that no path of a relay-mode replica takes the header.
        if (request.headers[MESH_KEY_HEADER] !== undefined) throw noMeshRequests();
        return;
      }
      reply.hijack();
      this.#plain(request.raw, reply.raw);
    };
    app.addHook('onRequest', onRequest);
    // Upgraded sockets are not the HTTP server's to close: without this, close() would wait for every tunnel.
    app.addHook('preClose', async () => {
      app.server.off('connect', onConnect);
      app.server.off('upgrade', onUpgrade);
      for (const socket of this.#tunnels) socket.destroy();
      this.#tunnels.clear();
    });
  }

  #hop(req: IncomingMessage): MeshHop {
    if (req.headers[MESH_KEY_HEADER] !== undefined) throw noMeshRequests();
    const row: ReplicaRow = hubFor(this.#pool, req);
    return {
      dial: () =>
        dialReplica({ meshUrl: row.meshUrl, cluster: null }, this.#caPin).catch((err: unknown) => {
          this.#pool.markFailed(row.id);
          throw err;
        }),
      headers: meshHeaders(this.#key, peerAddress(req.socket), VIA_RELAY),
      stats: this.#stats,
    };
  }

  /** A CONNECT or Upgrade: forwarded, or answered with the error envelope on the socket. */
  #raw(req: IncomingMessage, socket: Duplex, forward: () => Promise<void>, counted: boolean): void {
    if (counted) this.#count(socket);
    this.#tunnels.add(socket);
    socket.once('close', () => this.#tunnels.delete(socket));
    let started: Promise<void>;
    try {
      started = forward();
    } catch (err) {
      started = Promise.reject(err);
    }
    started.catch((err: unknown) => this.#refuse(req, socket, err, req.method === 'CONNECT'));
  }

  #plain(req: IncomingMessage, res: ServerResponse): void {
    this.#count(res);
    let started: Promise<void>;
    try {
      started = forwardRequest(this.#hop(req), req, res);
    } catch (err) {
      started = Promise.reject(err);
    }
    started.catch((err: unknown) => {
      const e = asTunnelError(err);
      this.#stats.failed++;
      this.#logRefusal(req, e);
      if (res.headersSent) return void res.destroy(e);
      const body = JSON.stringify(e.toJSON());
      res.writeHead(e.status, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  }

  #refuse(req: IncomingMessage, socket: Duplex, err: unknown, connect: boolean): void {
    const e = asTunnelError(err);
    this.#stats.failed++;
    this.#logRefusal(req, e);
    writeErrorResponse(socket, proxyStatus(e, connect), e);
  }

  #logRefusal(req: IncomingMessage, e: TunnelError): void {
    if (e.code === 'INTERNAL') this.#log.error({ err: e }, 'forward failed');
    else this.#log.info({ method: req.method, code: e.code }, `not forwarded: ${e.message}`);
  }

  #count(side: Duplex | ServerResponse): void {
    this.#inFlight++;
    side.once('close', () => {
      this.#inFlight--;
    });
  }

  #holdAgent(socket: Duplex): void {
    this.#agents.add(socket);
    socket.once('close', () => this.#agents.delete(socket));
  }

  #endAgents(): void {
    for (const socket of this.#agents) socket.destroy();
    this.#agents.clear();
  }
}
