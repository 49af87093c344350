/**
 * The child processes of session-storm-bench.ts (which forks itself with a role argument): the relay, the
 * probe (GET /healthz loops and one agent pinging the hub inside its WireGuard session) and the storm's agents.
 * They talk to the parent over IPC: one setup message, then { cmd } messages answered by { <key>: value }.
 */
import { createServer as createHttpServer } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import type { DataPlane } from '../relay/data/plane/data-plane.js';
import { hubProxyPlugin } from '../relay/data/proxy/proxy-plugin.js';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { startRelay } from '../relay/start/server.js';
import { publicKeyFromPrivate } from '../shared/keys.js';
import { connectDerp, type DerpClient, type DerpClientOptions } from '../shared/net/derp/client.js';
import { tryParseIpv4 } from '../shared/net/ip/echo-prober.js';
import {
  buildIcmpEchoPacket,
  ICMP_ECHO_REPLY,
  ICMP_ECHO_REQUEST,
  parseIcmpEcho,
  parseIpv4Address,
} from '../shared/net/ip/index.js';
import type { Tunnel } from '../tunnel-client/agent/types.js';
import { AgentSession } from '../tunnel-client/session/agent-session.js';

export type Phase = 'empty' | 'derp-wss' | 'wss' | 'derp-ws' | 'ws';
export const isBare = (p: Phase): boolean => p.startsWith('derp');
export const isTls = (p: Phase): boolean => p.endsWith('wss');
export interface AgentSpec {
  priv: string;
  tunnel: Tunnel;
}
export interface Ready {
  url: string;
  plainPort: number;
  caPin: string;
  hubPublicKey: string;
}
/** The spec of a seeded agent (seed-agents.ts) that reaches the hub of `ready` over DERP at `derpUrl`, no UDP. */
export function seededAgentSpec(
  ready: Ready,
  derpUrl: string,
  agent: { priv: string; address: string; psk: string },
): AgentSpec {
  return {
    priv: agent.priv,
    tunnel: {
      hubPublicKey: ready.hubPublicKey,
      presharedKey: agent.psk,
      address: `${agent.address}/32`,
      hubAddress: '100.64.0.1',
      relayUrl: ready.url,
      derpUrl,
      udpEndpoint: null,
    },
  };
}
export interface Mem {
  rss: number;
  heapUsed: number;
  external: number;
  clients: number;
  hubPeers: number;
  sessionsUp: number;
  extra: Record<string, number>;
}
/** Event-loop delay percentiles, ms. */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}
export interface Sample {
  t: number;
  ms: number;
  ok: boolean;
}
export interface AgentReport {
  /** Epoch ms per agent: connected (DERP) / session (handshake with the hub done); NaN = never. */
  connected: number[];
  session: number[];
  reconnects: number;
  initiations: number;
  cpuMs: number;
}

export const now = (): number => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (s: string) => process.stderr.write(`[session-storm] ${s}\n`);
export const PING_EVERY_MS = 20;
const LOOP_RESOLUTION_MS = 10;

// --- child: the relay ---------------------------------------------------------------------------

export async function relayChild(dir: string, maxPeers: number): Promise<void> {
  const config = resolveRelayConfig({
    flags: { listen: '127.0.0.1:0', dataDir: dir, logLevel: 'error', udpPort: 'off', stunPort: 'off' },
  });
  let dp: DataPlane | undefined;
  const relay = await startRelay(config, {
    logStream: process.stderr,
    plugins: [
      hubProxyPlugin(maxPeers > 0 ? { dataPlane: { hub: { maxPeers } } } : {}, (p) => {
        dp = p.dataPlane;
      }),
    ],
  });
  const plane = dp!;
  const plain = createHttpServer();
  plane.derp.attach(plain);
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const ready: Ready = {
    url: relay.url,
    plainPort: (plain.address() as AddressInfo).port,
    caPin: relay.caPin,
    hubPublicKey: relay.hubPublicKey,
  };
  process.send!({ ready });
  // Event-loop delay of the relay process, from 'loop-reset' (storm start) to 'loop' (all sessions up).
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  process.on('message', (m: { cmd: string; snapshot?: string }) => {
    if (m.cmd === 'loop-reset') loop.reset();
    if (m.cmd === 'loop') {
      // The histogram holds whole sampling intervals (resolution + delay): report the delay beyond it.
      const ms = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS);
      const lag: LoopDelay = {
        p50: ms(loop.percentile(50)),
        p99: ms(loop.percentile(99)),
        max: ms(loop.max),
      };
      process.send!({ lag });
    }
    if (m.cmd !== 'mem') return;
    if (m.snapshot) writeHeapSnapshot(m.snapshot);
    for (let i = 0; i < 3; i++) (globalThis as { gc?: () => void }).gc?.();
    const u = process.memoryUsage();
    const d = plane.derp.stats;
    const h = plane.hub.stats;
    const mem: Mem = {
      rss: u.rss,
      heapUsed: u.heapUsed,
      external: u.external, // includes arrayBuffers (Node's Buffers)
      clients: d.clients,
      hubPeers: h.agents,
      sessionsUp: plane.hub.device.peers.filter((p) => p.isSessionUp).length,
      extra: {
        handshakeTimeouts: d.handshakeTimeouts,
        refusedFull: d.refusedFull,
        replaced: d.replaced,
        cookieSent: h.device.drops['cookie-sent'],
        rateLimited: h.device.drops['rate-limited'],
        handshakeDrops: h.device.drops.handshake,
        notAdmitted: h.dropped.notAdmitted,
        lookupFull: h.dropped.lookupFull,
        handshakeQueueFull: h.dropped.handshakeQueueFull,
        handshakeStale: h.dropped.handshakeStale,
        derpPacketsIn: d.packetsIn,
        derpBytesIn: d.bytesIn,
        derpPacketsOut: d.packetsOut,
        derpBytesOut: d.bytesOut,
      },
    };
    process.send!({ mem });
  });
}

// --- child: the probe (GET /healthz loops and one pinging agent) -------------------------------

export async function probeChild(): Promise<void> {
  const { url, spec, caPin } = await new Promise<{ url: string; spec: AgentSpec; caPin?: string }>((r) =>
    process.once('message', r as (m: unknown) => void),
  );
  const keep = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
  const samples: Record<'kept' | 'fresh' | 'ping', Sample[]> = { kept: [], fresh: [], ping: [] };
  let running = true;
  const get = (agent: HttpsAgent | false): Promise<boolean> =>
    new Promise((resolve) => {
      const req = httpsRequest(
        `${url}/healthz`,
        { agent, rejectUnauthorized: false, timeout: 30_000 },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        },
      );
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
      req.end();
    });
  const loop = async (which: 'kept' | 'fresh', agent: HttpsAgent | false) => {
    while (running) {
      const t = now();
      const ok = await get(agent);
      samples[which].push({ t, ms: now() - t, ok });
      await sleep(Math.max(0, PING_EVERY_MS - (now() - t)));
    }
  };
  // The pinging agent: ICMP echo to the hub inside its WireGuard session; the reply carries the send time.
  const self = parseIpv4Address(spec.tunnel.address.split('/')[0]!);
  const hub = parseIpv4Address(spec.tunnel.hubAddress);
  const MAGIC = 'stormpng';
  const session = new AgentSession({
    privateKey: Buffer.from(spec.priv, 'base64'),
    tunnel: spec.tunnel,
    caPin,
    onInnerPacket: (p) => {
      const ip = tryParseIpv4(p);
      if (!ip) return;
      const e = parseIcmpEcho(ip);
      if (e.type !== ICMP_ECHO_REPLY || e.data.length !== 16 || e.data.toString('latin1', 0, 8) !== MAGIC)
        return;
      const t = e.data.readDoubleBE(8);
      samples.ping.push({ t, ms: now() - t, ok: true });
    },
  });
  await session.whenUp(30_000);
  process.send!({ probeReady: true });
  let seq = 0;
  const ping = setInterval(() => {
    const data = Buffer.alloc(16);
    data.write(MAGIC, 0, 'latin1');
    data.writeDoubleBE(now(), 8);
    seq = (seq + 1) & 0xffff;
    session.endpoint.send(
      buildIcmpEchoPacket(
        { src: self, dst: hub, type: ICMP_ECHO_REQUEST, identifier: 0x5757, sequence: seq },
        data,
      ),
    );
  }, PING_EVERY_MS);
  const loops = [loop('kept', keep), loop('fresh', false)];
  await new Promise((r) => process.once('message', r));
  running = false;
  clearInterval(ping);
  await Promise.all(loops);
  process.send!({ samples });
}

// --- child: storm agents --------------------------------------------------------------------------

export async function agentsChild(): Promise<void> {
  // Listening before saying so: a parent that waits for `listening` loses no message to a slow start.
  const setup = new Promise<{ specs: AgentSpec[]; mode: Phase; caPin?: string }>((r) =>
    process.once('message', r as (m: unknown) => void),
  );
  process.send!({ listening: true });
  const { specs, mode, caPin } = await setup;
  process.send!({ specsTaken: specs.length });
  await new Promise((r) => process.once('message', r)); // go
  const cpu0 = process.cpuUsage();
  const rep: AgentReport = {
    connected: specs.map(() => Number.NaN),
    session: specs.map(() => Number.NaN),
    reconnects: 0,
    initiations: 0,
    cpuMs: 0,
  };
  let up = 0;
  const keep: Array<{ close(): unknown }> = [];
  specs.forEach((s, i) => {
    const priv = Buffer.from(s.priv, 'base64');
    const onState = (e: { state: string }) => {
      if (e.state === 'connected' && Number.isNaN(rep.connected[i]!)) {
        rep.connected[i] = now();
        if (isBare(mode)) up++;
      }
      if (e.state === 'reconnecting') rep.reconnects++;
    };
    if (isBare(mode)) {
      keep.push(
        connectDerp({
          url: s.tunnel.derpUrl,
          keyPair: { privateKey: priv, publicKey: publicKeyFromPrivate(priv) },
          caPin,
          onPacket: () => {},
          onState,
        }),
      );
      return;
    }
    // Counts WireGuard initiations (message type 1) on their way to the relay.
    const connect = (o: DerpClientOptions): DerpClient => {
      const c = connectDerp(o);
      const send = c.send.bind(c);
      c.send = (dst, p) => {
        if (p[0] === 1) rep.initiations++;
        return send(dst, p);
      };
      return c;
    };
    const session = new AgentSession({
      privateKey: priv,
      tunnel: s.tunnel,
      caPin,
      derp: { onState },
      connect,
    });
    session.hub.once('session', () => {
      rep.session[i] = now();
      up++;
    });
    keep.push(session);
  });
  const report = () => {
    const cpu = process.cpuUsage(cpu0);
    rep.cpuMs = (cpu.user + cpu.system) / 1000;
    process.send!({ report: rep });
  };
  let reported = false;
  const progress = setInterval(() => {
    process.send!({ progress: up });
    if (up === specs.length && !reported) {
      reported = true;
      report();
    }
  }, 100);
  // 'report' (the storm timed out: report what we have), then 'stop' (exit without closing anything).
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'report') report();
    if (m.cmd === 'stop') {
      clearInterval(progress);
      process.exit(0);
    }
  });
}
