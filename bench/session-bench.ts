/**
 * Relayed WireGuard session benchmark (short). A real relay (startRelay with the data plane: DERP at
 * /derp and the hub node) runs in a child process; the agent side runs here.
 * - baseline: raw DERP packets from a registered agent key to the hub key (the relay and TLS cost only;
 *   each is a WireGuard transport header naming no session, so the hub drops it after an index lookup)
 * - session: inner UDP packets through the agent's WireGuard session (seal here, relay, open at the hub)
 * Both at 1,400 B and 16 KiB inner payloads; reports what the hub received per second and the session
 * as a ratio of the baseline measured in this run.
 * Run: npm run build:tools && node dist/bench/session-bench.js [seconds-per-run=3]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import type { DataPlane } from '../relay/data/plane/data-plane.js';
import { hubProxyPlugin } from '../relay/data/proxy/proxy-plugin.js';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { startRelay } from '../relay/start/server.js';
import { generateKeyPair, type KeyPair, keyToBase64 } from '../shared/keys.js';
import { connectDerp } from '../shared/net/derp/client.js';
import { buildUdpPacket, parseIpv4Address } from '../shared/net/ip/index.js';
import type { Tunnel } from '../tunnel-client/agent/types.js';
import { AgentSession } from '../tunnel-client/session/agent-session.js';
import { describeMachine, ratio } from './machine.js';

interface Ready {
  url: string;
  caPin: string;
  adminKey: string;
}
interface Counts {
  inner: number;
  innerBytes: number;
  rxDatagrams: number;
  rxBytes: number;
}

// --- child: the relay ---------------------------------------------------------------------------

async function relayChild(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'session-bench-'));
  let dp: DataPlane | undefined;
  const counts: Counts = { inner: 0, innerBytes: 0, rxDatagrams: 0, rxBytes: 0 };
  const config = resolveRelayConfig({
    flags: { listen: '127.0.0.1:0', dataDir: dir, logLevel: 'warn', udpPort: 'off', stunPort: 'off' },
  });
  const relay = await startRelay(config, {
    logStream: process.stderr,
    plugins: [
      hubProxyPlugin(
        {
          dataPlane: {
            onPacket: (_s, _d, p) => {
              counts.rxDatagrams++;
              counts.rxBytes += p.length;
            },
            hub: {
              onInnerPacket: (p) => {
                counts.inner++;
                counts.innerBytes += p.length;
              },
            },
          },
        },
        (p) => {
          dp = p.dataPlane;
        },
      ),
    ],
  });
  void dp;
  process.send!({ ready: { url: relay.url, caPin: relay.caPin, adminKey: relay.adminKey } });
  process.on('message', async (m: { cmd: string }) => {
    if (m.cmd === 'counts') process.send!({ counts });
    if (m.cmd === 'stop') {
      await relay.close();
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }
  });
}

// --- parent: the agents -------------------------------------------------------------------------

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tick = () => new Promise((r) => setImmediate(r));

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 3);
  console.log(`# session-bench on ${describeMachine()}, ${seconds} s per run`);
  const child = fork(fileURLToPath(import.meta.url), ['child'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(cmd: string, key: string): Promise<T> =>
    new Promise((resolve) => {
      const on = (m: Record<string, unknown>) => {
        if (key in m) {
          child.off('message', on);
          resolve(m[key] as T);
        }
      };
      child.on('message', on);
      if (cmd) child.send({ cmd });
    });
  const ready = await ask<Ready>('', 'ready');
  const http = new Agent({ connect: { rejectUnauthorized: false } });
  const call = async (path: string, token: string, body: unknown) => {
    const res = await request(`${ready.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      dispatcher: http,
    });
    return (await res.body.json()) as {
      bootstrap: { psk: string };
      tunnel: Tunnel;
    };
  };
  const register = async (name: string): Promise<{ kp: KeyPair; tunnel: Tunnel }> => {
    const created = await call('/api/v1/clusters', ready.adminKey, { name });
    const kp = generateKeyPair();
    const reg = await call('/api/v1/register', created.bootstrap.psk, {
      cluster: name,
      publicKey: keyToBase64(kp.publicKey),
      agentVersion: '0.1.0',
    });
    return { kp, tunnel: reg.tunnel };
  };

  const raw = await register('bench-raw');
  const wg = await register('bench-wg');
  const hubKey = Buffer.from(raw.tunnel.hubPublicKey, 'base64');
  const derp = connectDerp({
    url: raw.tunnel.derpUrl,
    keyPair: raw.kp,
    caPin: ready.caPin,
    onPacket: () => {},
  });
  await derp.whenConnected(10_000);
  const session = new AgentSession({ privateKey: wg.kp.privateKey, tunnel: wg.tunnel, caPin: ready.caPin });
  await session.whenUp(10_000);
  const self = parseIpv4Address(wg.tunnel.address.split('/')[0]!);
  const hub = parseIpv4Address(wg.tunnel.hubAddress);

  /** Sends for `seconds`, yielding to the event loop every burst; returns what the relay counted. */
  const run = async (send: () => boolean, pick: (c: Counts) => number): Promise<number> => {
    const before = pick(await ask<Counts>('counts', 'counts'));
    const end = performance.now() + seconds * 1000;
    while (performance.now() < end) {
      for (let i = 0; i < 32; i++) if (!send()) break;
      await tick();
    }
    await sleep(300);
    return (pick(await ask<Counts>('counts', 'counts')) - before) / seconds;
  };

  console.log(
    '| inner payload | raw DERP to hub (pkt/s, Mbit/s) | WireGuard session (pkt/s, Mbit/s) | session / raw |',
  );
  console.log('|---|---|---|---|');
  for (const size of [1400, 16 * 1024]) {
    const udp = buildUdpPacket(
      { src: self, dst: hub, srcPort: 5000, dstPort: 5001 },
      Buffer.alloc(size, 0x5a),
    );
    // Same bytes on the wire as the session's datagram would carry: inner packet + WireGuard's 32 bytes.
    const rawPayload = Buffer.alloc(udp.length + 32, 0x5a);
    rawPayload.writeUInt32LE(4, 0); // type 4 (transport data), reserved zero
    rawPayload.writeUInt32LE(0xffffffff, 4); // a receiver index the hub never issued
    const rawRate = await run(
      () => derp.send(hubKey, rawPayload),
      (c) => c.rxDatagrams,
    );
    const wgRate = await run(
      () => {
        if (!session.derp.connected) return false;
        const drops = session.hub.drops['send-failed'];
        session.endpoint.send(udp);
        return session.hub.drops['send-failed'] === drops;
      },
      (c) => c.inner,
    );
    const mbit = (pps: number) => ((pps * size * 8) / 1e6).toFixed(0);
    console.log(
      `| ${size} B | ${rawRate.toFixed(0)}, ${mbit(rawRate)} | ${wgRate.toFixed(0)}, ${mbit(wgRate)} | ${ratio(wgRate, rawRate)} |`,
    );
  }
  derp.close();
  await session.close();
  await http.close();
  child.send({ cmd: 'stop' });
}

if (process.argv[2] === 'child') void relayChild();
else
  void main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
