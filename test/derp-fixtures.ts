/**
 * Test fixtures for the DERP relay: a real https server on 127.0.0.1 with a throw-away self-signed
 * certificate, the DERP server attached to it, and real WebSocket clients pinned to that certificate.
 */
import { createServer, type Server } from 'node:https';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { WebSocket } from 'ws';
import { createDerpServer, type DerpServer, type DerpServerOptions } from '../relay/data/derp/server.js';
import { generateKeyPair, type KeyPair } from '../shared/keys.js';
import {
  connectDerp,
  type DerpClient,
  type DerpClientOptions,
  type DerpStateEvent,
} from '../shared/net/derp/client.js';
import { FrameParser } from '../shared/net/derp/frame-parser.js';
import { decodeServerKey, FRAME_HEADER_LEN, FrameType } from '../shared/net/derp/frames.js';
import { encodeClientInfo, sharedKey } from '../shared/net/derp/handshake.js';
import { pinOfCertificate } from '../shared/tls-pin.js';
import { makeSelfSignedCert, type TestCert } from './helpers/test-cert.js';

let cert: TestCert | undefined;
export function testCert(): TestCert {
  cert ??= makeSelfSignedCert();
  return cert;
}

export interface TestRelay {
  readonly https: Server;
  readonly derp: DerpServer;
  readonly keyPair: KeyPair;
  readonly url: string;
  readonly pin: string;
  readonly admitted: Set<string>;
  /** Every routed packet: `${srcB64}>${dstB64}:${payload as latin1}` (copied). */
  readonly routed: Array<{ src: Buffer; dst: Buffer; payload: Buffer }>;
  /** Replaces the DERP server (old one shut down first), keeping the https listener and its port. */
  restart(extra?: Partial<DerpServerOptions>): Promise<void>;
  close(): Promise<void>;
}

export type PolicyFn = (src: Buffer, dst: Buffer) => boolean;

export async function startRelay(
  extra: Partial<DerpServerOptions> & { allow?: PolicyFn; port?: number } = {},
): Promise<TestRelay> {
  const c = testCert();
  const https = createServer({ key: c.key, cert: c.cert });
  await new Promise<void>((resolve) => https.listen(extra.port ?? 0, '127.0.0.1', resolve));
  const port = (https.address() as AddressInfo).port;
  const keyPair = extra.keyPair ?? generateKeyPair();
  const admitted = new Set<string>();
  const routed: TestRelay['routed'] = [];
  const allow = extra.allow ?? (() => true);
  const make = (more: Partial<DerpServerOptions> = {}): { derp: DerpServer; detach: () => void } => {
    const derp = createDerpServer({
      keyPair,
      admission: { isAdmitted: (k) => admitted.has(k.toString('base64')) },
      policy: { canSend: allow },
      onPacket: (src, dst, payload) =>
        routed.push({ src: Buffer.from(src), dst: Buffer.from(dst), payload: Buffer.from(payload) }),
      ...extra,
      ...more,
    });
    return { derp, detach: derp.attach(https) };
  };
  let current = make();
  const relay: TestRelay = {
    https,
    get derp() {
      return current.derp;
    },
    keyPair,
    url: `wss://127.0.0.1:${port}/derp`,
    pin: pinOfCertificate(c.der),
    admitted,
    routed,
    async restart(more) {
      await current.derp.shutdown();
      current.detach();
      current = make(more);
    },
    async close() {
      await current.derp.shutdown();
      current.detach();
      https.closeAllConnections();
      await new Promise<void>((resolve) => https.close(() => resolve()));
    },
  };
  return relay;
}

export interface TestClient {
  readonly keyPair: KeyPair;
  readonly client: DerpClient;
  readonly received: Array<{ src: Buffer; payload: Buffer }>;
  readonly states: DerpStateEvent[];
}

/** A pinned WebSocket client; its key is admitted first unless `admit` is false. */
export function startClient(
  relay: TestRelay,
  opts: Partial<DerpClientOptions> & { admit?: boolean } = {},
): TestClient {
  const keyPair = opts.keyPair ?? generateKeyPair();
  if (opts.admit !== false) relay.admitted.add(keyPair.publicKey.toString('base64'));
  const received: TestClient['received'] = [];
  const states: DerpStateEvent[] = [];
  const client = connectDerp({
    url: relay.url,
    caPin: relay.pin,
    serverPublicKey: relay.keyPair.publicKey,
    onPacket: (src, payload) => received.push({ src: Buffer.from(src), payload: Buffer.from(payload) }),
    onState: (e) => states.push(e),
    ...opts,
    keyPair,
  });
  return { keyPair, client, received, states };
}

export interface RawClient {
  readonly ws: WebSocket;
  readonly keyPair: KeyPair;
  readonly frames: Array<{ type: number; body: Buffer }>;
  readonly closed: Promise<{ code: number; reason: string }>;
}

/**
 * A bare WebSocket speaking the frame protocol by hand, for misbehaving clients. With `handshake`, it answers
 * the ServerKey with a valid ClientInfo.
 */
export async function rawClient(
  relay: TestRelay,
  handshake: boolean,
  keyPair = generateKeyPair(),
): Promise<RawClient> {
  const ws = new WebSocket(relay.url, 'derp', { rejectUnauthorized: false, perMessageDeflate: false });
  const frames: RawClient['frames'] = [];
  const parser = new FrameParser((type, f) => {
    const body = Buffer.from(f.subarray(FRAME_HEADER_LEN));
    frames.push({ type, body });
    if (handshake && type === FrameType.ServerKey) {
      const sk = decodeServerKey(body);
      ws.send(encodeClientInfo(keyPair.publicKey, sharedKey(sk.serverKey, keyPair.privateKey), sk.challenge));
    }
  });
  ws.on('message', (d: Buffer) => parser.push(d));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, keyPair, frames, closed };
}

export interface BlackholeProxy {
  readonly port: number;
  /** While on, nothing is passed on in either direction, closes included (no FIN, no RST). */
  setBlackhole(on: boolean): void;
  close(): Promise<void>;
}

/** A TCP forwarder to 127.0.0.1:targetPort that can silently stop forwarding. */
export async function blackholeProxy(targetPort: number): Promise<BlackholeProxy> {
  let blackhole = false;
  const sockets = new Set<Socket>();
  const server = createTcpServer((down) => {
    const up = connect(targetPort, '127.0.0.1');
    sockets.add(down);
    sockets.add(up);
    down.on('data', (d) => {
      if (!blackhole) up.write(d);
    });
    up.on('data', (d) => {
      if (!blackhole) down.write(d);
    });
    const end = () => {
      if (blackhole) return;
      up.destroy();
      down.destroy();
    };
    down.on('close', end);
    up.on('close', end);
    down.on('error', end);
    up.on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    setBlackhole(on) {
      blackhole = on;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
