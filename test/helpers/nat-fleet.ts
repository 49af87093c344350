/**
 * A relay fleet with the direct path, for the fleet direct-path tests: real `tunnel-relay serve` replicas on one
 * throw-away PostgreSQL (replica-fleet.ts) behind a real haproxy (haproxy.ts), all on the host side of a
 * MASQUERADE router's WAN (nat-topology.ts), each replica with its own `--udp-port` and STUN port; and one
 * cluster whose real agent (`tunnel-client run`) runs in the namespace behind the router, joined through
 * haproxy, its upstream an HTTP server on the host (pattern bytes, proxy-fixtures.ts). Replicas can be
 * killed (SIGKILL), stopped (SIGTERM: drain) and started again on their ports and data dirs.
 */
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { cleanEnv, freeUdpPort, type Proc, RELAY_BIN, run, tempDir } from '../cli-harness.js';
import { sampleHandler } from '../proxy-fixtures.js';
import { type AgentStatus, readAgentStatus } from './agent-status.js';
import { type Haproxy, startHaproxy } from './haproxy.js';
import { startNamespaceAgent } from './namespace-agent.js';
import { createNatTopology, type NatTopology } from './nat-topology.js';
import type { ProcessHandle } from './process.js';
import { type ReplicaFleet, startReplicaFleet } from './replica-fleet.js';
import { freePort } from './tinyproxy.js';

export interface FleetReplica {
  readonly name: string;
  readonly port: number;
  readonly udpPort: number;
  readonly stunPort: number;
  readonly dataDir: string;
  proc: Proc | null;
}

export interface NatFleet {
  readonly t: NatTopology;
  readonly base: ReplicaFleet;
  readonly lb: Haproxy;
  readonly replicas: readonly FleetReplica[];
  readonly publicUrl: string;
  readonly caFile: string;
  readonly adminKey: string;
  readonly cluster: string;
  readonly upstreamPort: number;
  readonly agent: ProcessHandle;
  /** `tunnel-client status --output json` (the CLI). */
  status(): Promise<AgentStatus>;
  /**
   * The agent's status.json as it wrote it, read without a process (cheap enough to poll every few hundred ms
   * beside the agent); null while it is being rewritten. The CLI prints these fields while the agent runs.
   */
  statusFile(): AgentStatus | null;
  startReplica(r: FleetReplica): Promise<void>;
  /** The replica's /metrics as name{labels} -> value; null while it does not answer. */
  metrics(r: FleetReplica): Promise<Map<string, number> | null>;
  /** The replicas the agent's relay connection is on now (one, or none while it moves). */
  agentReplicas(): Promise<FleetReplica[]>;
  stop(): Promise<void>;
}

const host = (t: NatTopology) => t.hubPublicAddress;

/** One GET with a fresh connection, 5 s at most; null when it fails. */
function getText(url: string, ca: string): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    const req = request(url, { ca, agent: false, timeout: 5_000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(null));
    req.end();
  });
}

function readStatusFile(stateDir: string): AgentStatus | null {
  try {
    return JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as AgentStatus;
  } catch {
    return null;
  }
}

/** Prometheus text as `name{labels}` (labels as written) -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

export async function startNatFleet(o: {
  replicas: number;
  cluster: string;
  drainGraceS: number;
  /** How long the running agent may live. */
  timeoutMs: number;
}): Promise<NatFleet> {
  const t = await createNatTopology({ nat: 'masquerade' });
  const h = host(t);
  const base = await startReplicaFleet('nat-fleet', { altNames: [h] });
  const replicas: FleetReplica[] = [];
  for (let i = 0; i < o.replicas; i++)
    replicas.push({
      name: `r${i}`,
      port: await freePort(),
      udpPort: await freeUdpPort(h),
      stunPort: await freeUdpPort(h),
      dataDir: tempDir(`nat-fleet-r${i}-`),
      proc: null,
    });
  const lb = await startHaproxy({
    servers: replicas.map((r) => ({ name: r.name, host: h, port: r.port })),
    bindHost: h,
    timeoutMs: o.timeoutMs,
  });
  const publicUrl = `https://${h}:${lb.port}`;
  const startReplica = async (r: FleetReplica): Promise<void> => {
    const started = await base.startReplica({
      listen: `${h}:${r.port}`,
      dataDir: r.dataDir,
      // A replica may start beside a download through the others (the tests restart one meanwhile).
      readyTimeoutMs: 60_000,
      extraArgs: [
        ...['--public-url', publicUrl, '--drain-grace', String(o.drainGraceS)],
        ...['--udp-port', String(r.udpPort), '--stun-port', String(r.stunPort)],
      ],
    });
    r.proc = started.proc;
  };
  await startReplica(replicas[0]!);
  await Promise.all(replicas.slice(1).map(startReplica));
  await lb.waitForUp(replicas.map((r) => r.name));
  const adminKey = base.adminKey();
  const caFile = join(base.dir, 'fleet-ca.pem');
  writeFileSync(caFile, base.files.caPem);
  const upstream = http.createServer(sampleHandler(o.cluster));
  upstream.listen(0, h);
  await once(upstream, 'listening');
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const env = cleanEnv({
    TUNNEL_RELAY_URL: publicUrl,
    TUNNEL_ACCESS_KEY: adminKey,
    TUNNEL_RELAY_CA_PIN: base.files.caPin,
  });
  // Through haproxy to a replica on PostgreSQL: slow on a loaded machine, so 60 s rather than run's 20 s.
  const created = await run(RELAY_BIN, ['cluster', 'create', o.cluster, '--output', 'json'], env, 60_000);
  if (created.code !== 0) throw new Error(`cluster create exited ${created.code}: ${created.stderr}`);
  const { stateDir, proc: agent } = await startNamespaceAgent(t.agent, {
    joinCommand: JSON.parse(created.stdout).bootstrap.joinCommand as string,
    extraArgs: ['--upstream', `http://${h}:${upstreamPort}`],
    prefix: 'nat-fleet-agent',
    runTimeoutMs: o.timeoutMs,
  });
  const metrics = async (r: FleetReplica): Promise<Map<string, number> | null> => {
    const m = await getText(`https://${h}:${r.port}/metrics`, base.files.caPem);
    return m?.status === 200 ? parseMetrics(m.body) : null;
  };
  return {
    t,
    base,
    lb,
    replicas,
    publicUrl,
    caFile,
    adminKey,
    cluster: o.cluster,
    upstreamPort,
    agent,
    status: () => readAgentStatus(stateDir),
    statusFile: () => readStatusFile(stateDir),
    startReplica,
    metrics,
    async agentReplicas() {
      const counts = await Promise.all(
        replicas.map(async (r) => (await metrics(r))?.get('tunnel_relay_derp_clients')),
      );
      // The hub's own in-process client is one; the agent's connection makes two.
      return replicas.filter((_r, i) => (counts[i] ?? 0) >= 2);
    },
    async stop() {
      await agent.stop();
      await Promise.all(replicas.map((r) => r.proc?.stop('SIGKILL')));
      await lb.stop();
      await base.stop();
      upstream.close();
      await t.destroy();
    },
  };
}
