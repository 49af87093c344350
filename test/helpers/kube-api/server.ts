/**
 * A test Kubernetes API server (no real one can run here), behaving as kube-apiserver does for what the agent and
 * kubectl send: TLS with its own CA, bearer tokens, impersonation and RBAC (authz.ts), discovery (/version, /api,
 * /apis, /api/v1), nodes (list, with `limit`), namespaces, pods (list, chunked watch, get, delete), exec/attach
 * Upgrades (exec.ts) and port-forward (port-forward.ts).
 * Every request's raw headers are kept in `seen`, so tests assert exactly what reached the API server.
 */
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type Access, type AuthzConfig, authenticate, authorize, type Identity } from './authz.js';
import { type ExecSession, serveExec } from './exec.js';
import { type PortForward, servePortForward } from './port-forward.js';
import {
  API_GROUPS,
  API_VERSIONS,
  CORE_RESOURCES,
  NAMESPACES,
  nodeList,
  PodStore,
  VERSION,
} from './resources.js';
import { failure, type KubeStatus, sendJson, sendStatus } from './status.js';

export interface SeenRequest {
  method: string;
  url: string;
  rawHeaders: string[];
  /** The status the server answered (101 for a served Upgrade). */
  status: number;
}

export interface KubeApiServer {
  readonly url: string;
  readonly port: number;
  readonly pods: PodStore;
  /** The nodes `GET /api/v1/nodes` lists (three by default). */
  nodes: string[];
  /** What `GET /version` answers (tests may make it hostile). */
  version: unknown;
  readonly authz: AuthzConfig;
  readonly seen: SeenRequest[];
  readonly execs: ExecSession[];
  readonly portForwards: PortForward[];
  /** The pod's ports for port-forward: pod port -> a real 127.0.0.1 port the test listens on. */
  readonly podPorts: Map<number, number>;
  close(): Promise<void>;
}

const POD_PATH =
  /^\/api\/v1\/namespaces\/([a-z0-9-]+)\/pods(?:\/([a-z0-9.-]+)(?:\/(exec|attach|portforward))?)?$/;

/** The access a request asks for; null when the path is not one this server serves. */
function accessOf(method: string, url: URL): Access | null {
  const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
  if (url.pathname === '/api/v1/namespaces')
    return { verb: watch ? 'watch' : 'list', resource: 'namespaces' };
  if (url.pathname === '/api/v1/nodes') return { verb: 'list', resource: 'nodes' };
  const m = POD_PATH.exec(url.pathname);
  if (!m) return null;
  const [, namespace, name, sub] = m;
  if (sub) return { verb: 'create', resource: `pods/${sub}`, name, namespace };
  if (!name) return { verb: watch ? 'watch' : 'list', resource: 'pods', namespace };
  return { verb: method === 'DELETE' ? 'delete' : 'get', resource: 'pods', name, namespace };
}

const DISCOVERY: Readonly<Record<string, unknown>> = {
  '/api': API_VERSIONS,
  '/apis': API_GROUPS,
  '/api/v1': CORE_RESOURCES,
};

function serveWatch(pods: PodStore, url: URL, res: ServerResponse): void {
  const since = Number(url.searchParams.get('resourceVersion') ?? '0') || 0;
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  for (const p of pods.list().items) {
    if (Number(p.metadata.resourceVersion) > since)
      res.write(`${JSON.stringify({ type: 'ADDED', object: p })}\n`);
  }
  const stop = pods.watch((e) => res.write(`${JSON.stringify(e)}\n`));
  res.on('close', stop);
}

function serve(api: KubeApiServer, req: IncomingMessage, res: ServerResponse, who: Identity): void {
  const method = req.method ?? 'GET';
  const url = new URL(req.url ?? '/', 'https://x');
  const doc = url.pathname === '/version' ? api.version : DISCOVERY[url.pathname];
  if (doc !== undefined && method === 'GET') return void sendJson(res, 200, doc);
  const access = accessOf(method, url);
  if (access === null)
    return void sendStatus(res, failure(404, 'the server could not find the requested resource'));
  const denied = authorize(api.authz, who, access);
  if (denied) return void sendStatus(res, denied);
  if (access.resource === 'namespaces') return void sendJson(res, 200, NAMESPACES);
  if (access.resource === 'nodes') {
    const limit = url.searchParams.get('limit');
    return void sendJson(res, 200, nodeList(api.nodes, limit === null ? null : Number(limit)));
  }
  if (access.verb === 'watch') return void serveWatch(api.pods, url, res);
  if (access.verb === 'list') return void sendJson(res, 200, api.pods.list());
  const pod = access.verb === 'delete' ? api.pods.delete(access.name!) : api.pods.get(access.name!);
  if (!pod) return void sendStatus(res, failure(404, `pods "${access.name}" not found`));
  sendJson(res, 200, pod);
}

function writeStatus(socket: Duplex, s: KubeStatus): void {
  const body = JSON.stringify(s);
  socket.end(
    `HTTP/1.1 ${s.code} ${s.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export async function startKubeApiServer(o: {
  cert: string;
  key: string;
  authz: AuthzConfig;
}): Promise<KubeApiServer> {
  const seen: SeenRequest[] = [];
  const server = https.createServer({ cert: o.cert, key: o.key });
  const api: KubeApiServer = {
    url: '',
    port: 0,
    pods: new PodStore(),
    nodes: ['node-1', 'node-2', 'node-3'],
    version: VERSION,
    authz: o.authz,
    seen,
    execs: [],
    portForwards: [],
    podPorts: new Map(),
    close: async () => {
      if (!server.listening) return;
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const row: SeenRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      rawHeaders: req.rawHeaders,
      status: 0,
    };
    seen.push(row);
    const who = authenticate(api.authz, req.headers);
    if ('kind' in who) sendStatus(res, who);
    else serve(api, req, res, who);
    row.status = res.statusCode;
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const row: SeenRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      rawHeaders: req.rawHeaders,
      status: 101,
    };
    seen.push(row);
    socket.on('error', () => {});
    const who = authenticate(api.authz, req.headers);
    const url = new URL(req.url ?? '/', 'https://x');
    const access = accessOf(req.method ?? 'GET', url);
    const denied: KubeStatus | null =
      'kind' in who
        ? who
        : access === null || !access.resource.includes('/')
          ? failure(400, 'not an Upgrade endpoint')
          : authorize(api.authz, who, access);
    if (denied) {
      row.status = denied.code;
      return void writeStatus(socket, denied);
    }
    if (access?.resource === 'pods/portforward') {
      const record: PortForward = { protocol: '', connections: [] };
      api.portForwards.push(record);
      return void servePortForward(req, socket, head, api.podPorts, record);
    }
    serveExec(req, socket, head, api.execs);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return Object.assign(api, { url: `https://127.0.0.1:${port}`, port });
}
