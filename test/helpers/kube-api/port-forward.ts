/**
 * port-forward on the test API server, as the kubelet serves it (`portforward.k8s.io`), over a SPDY/3.1 Upgrade or
 * tunnelled inside a WebSocket (`SPDY/3.1+portforward.k8s.io`, what kubectl tries first). Each forwarded
 * connection is a pair of streams with one `requestid`: `error` and `data`, both naming the `port`. The pod's ports
 * are real TCP listeners the test gives in `podPorts` (pod port -> 127.0.0.1 port).
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { SpdySession, type SpdyStream } from './spdy/session.js';

export interface PortForward {
  protocol: string;
  /** The pod ports of the connections forwarded, in order. */
  connections: number[];
}

const TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
const MAX_PAIRS = 64;

function forward(
  pair: { error: SpdyStream; data: SpdyStream },
  target: number | undefined,
  port: number,
): void {
  if (target === undefined) {
    pair.error.end(`unable to forward port ${port}: the pod has no such port`);
    return void pair.data.end();
  }
  const tcp = net.connect(target, '127.0.0.1');
  pair.data.onData = (d) => tcp.write(d);
  pair.data.onEnd = () => tcp.end();
  tcp.on('data', (d: Buffer) => pair.data.write(d));
  tcp.on('end', () => {
    pair.data.end();
    pair.error.end();
  });
  tcp.on('error', (err) => {
    pair.error.end(`connecting to pod port ${port}: ${err.message}`);
    pair.data.end();
  });
}

function session(socket: Duplex, podPorts: ReadonlyMap<number, number>, record: PortForward): void {
  const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream }>();
  new SpdySession(socket, (stream) => {
    const id = stream.headers.requestid ?? '';
    const type = stream.headers.streamtype;
    if (type !== 'error' && type !== 'data') return;
    if (!pairs.has(id) && pairs.size >= MAX_PAIRS) return void stream.end();
    const pair = pairs.get(id) ?? {};
    pair[type] = stream;
    pairs.set(id, pair);
    if (!pair.error || !pair.data) return;
    pairs.delete(id);
    const port = Number(stream.headers.port);
    record.connections.push(port);
    forward({ error: pair.error, data: pair.data }, podPorts.get(port), port);
  });
}

export function servePortForward(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  podPorts: ReadonlyMap<number, number>,
  record: PortForward,
): void {
  if (/^spdy\//i.test(req.headers.upgrade ?? '')) {
    record.protocol = 'SPDY/3.1';
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        'X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n',
    );
    return void session(socket, podPorts, record);
  }
  // The subprotocol has a '/', which ws's header parser refuses (RFC 7230 tokens); kube-apiserver takes it, so
  // the offer is read here and the answer added to the 101 by hand.
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  if (!offered.includes(TUNNEL_PROTOCOL)) return void socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
  delete req.headers['sec-websocket-protocol'];
  const wss = new WebSocketServer({ noServer: true });
  wss.on('headers', (headers) => headers.push(`Sec-WebSocket-Protocol: ${TUNNEL_PROTOCOL}`));
  wss.handleUpgrade(req, socket, head, (ws) => {
    record.protocol = TUNNEL_PROTOCOL;
    session(createWebSocketStream(ws), podPorts, record);
  });
}
