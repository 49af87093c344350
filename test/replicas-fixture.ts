/**
 * A relay fleet for the replica tests: three real `tunnel-relay serve` processes on fixed loopback ports,
 * sharing one throw-away PostgreSQL and the fleet's hub key, certificate and mesh key (helpers/replica-fleet.ts),
 * behind a real haproxy in TCP mode health-checked on /readyz (helpers/haproxy.ts); the public URL is haproxy's,
 * so agents join, connect and reconnect through it. Each replica can be stopped (SIGTERM: drain), killed
 * (SIGKILL) and started again on its port and data dir. `get` sends one HTTPS request with a fresh connection,
 * to haproxy or to a replica directly.
 */
import http from 'node:http';
import { request } from 'node:https';
import { join } from 'node:path';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  CLIENT_BIN,
  cleanEnv,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  tempDir,
  waitConnected,
} from './cli-harness.js';
import { type Haproxy, startHaproxy } from './helpers/haproxy.js';
import { type ReplicaFleet, startReplicaFleet } from './helpers/replica-fleet.js';
import { freePort } from './helpers/tinyproxy.js';
import { listen, sampleHandler } from './proxy-fixtures.js';

export interface Replica {
  readonly name: string;
  readonly port: number;
  readonly dataDir: string;
  proc: Proc | null;
  ready: ReadyLine | null;
}

export interface Reply {
  status: number;
  body: string;
}

export interface FleetOptions {
  replicas: number;
  /** --drain-grace of every replica, seconds. */
  drainGraceS: number;
}

export class RelayFleet {
  readonly replicas: Replica[] = [];
  base!: ReplicaFleet;
  lb!: Haproxy;
  publicUrl = '';
  caPem = '';
  adminKey = '';
  upstream: http.Server | null = null;
  upstreamPort = 0;
  agent: Proc | null = null;
  readonly #opts: FleetOptions;

  constructor(opts: FleetOptions) {
    this.#opts = opts;
  }

  async start(): Promise<void> {
    this.base = await startReplicaFleet('fleet');
    this.caPem = this.base.files.caPem;
    for (let i = 0; i < this.#opts.replicas; i++) {
      this.replicas.push({
        name: `r${i}`,
        port: await freePort(),
        dataDir: tempDir(`fleet-r${i}-`),
        proc: null,
        ready: null,
      });
    }
    this.lb = await startHaproxy({
      servers: this.replicas.map((r) => ({ name: r.name, host: '127.0.0.1', port: r.port })),
    });
    this.publicUrl = `https://127.0.0.1:${this.lb.port}`;
    // The first start mints the admin key; the others start together.
    const first = this.replicas[0]!;
    await this.startReplica(first);
    this.adminKey = first.ready!.adminKey ?? '';
    await Promise.all(this.replicas.slice(1).map((r) => this.startReplica(r)));
    await this.lb.waitForUp(this.replicas.map((r) => r.name));
  }

  async startReplica(r: Replica): Promise<void> {
    const { proc, ready } = await this.base.startReplica({
      listen: `127.0.0.1:${r.port}`,
      dataDir: r.dataDir,
      extraArgs: ['--public-url', this.publicUrl, '--drain-grace', String(this.#opts.drainGraceS)],
    });
    r.proc = proc;
    r.ready = ready;
  }

  /** The admin CLI's environment, through the load balancer. */
  adminEnv(): NodeJS.ProcessEnv {
    return cleanEnv({
      TUNNEL_RELAY_URL: this.publicUrl,
      TUNNEL_ACCESS_KEY: this.adminKey,
      TUNNEL_RELAY_CA_PIN: this.base.files.caPin,
    });
  }

  /** Creates cluster `name`, joins an agent through the load balancer with a plain HTTP upstream, runs it. */
  async joinAgent(name: string): Promise<void> {
    this.upstream = http.createServer(sampleHandler(name));
    this.upstreamPort = await listen(this.upstream);
    const env = this.adminEnv();
    const created = await run(RELAY_BIN, ['cluster', 'create', name, '--output', 'json'], env);
    if (created.code !== 0) throw new Error(`cluster create: ${created.stderr}`);
    const joinArgs = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand as string);
    const stateDir = join(tempDir('fleet-agent-'), 'state');
    const upstream = ['--upstream', `http://127.0.0.1:${this.upstreamPort}`];
    const j = await run(
      CLIENT_BIN,
      [...joinArgs, '--state-dir', stateDir, ...upstream, '--wait'],
      cleanEnv(),
      40_000,
    );
    if (j.code !== 0) throw new Error(`join: ${j.stderr}`);
    this.agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    await waitConnected(env, name, 20_000);
  }

  /** One GET with a fresh connection to `base` (haproxy's or a replica's URL), 5 s at most. */
  get(base: string, path: string, token = this.adminKey): Promise<Reply> {
    return this.send({ base, method: 'GET', path, token });
  }

  /** One POST of a JSON body, with the admin key. */
  post(base: string, path: string, body: unknown): Promise<Reply> {
    return this.send({ base, method: 'POST', path, token: this.adminKey, body });
  }

  send(o: { base: string; method: string; path: string; token: string; body?: unknown }): Promise<Reply> {
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    return new Promise((resolve) => {
      const req = request(
        new URL(o.path, o.base),
        {
          method: o.method,
          ca: this.caPem,
          agent: false,
          timeout: 5_000,
          headers: {
            ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
            ...(payload ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          res.on('error', (e) => resolve({ status: 0, body: e.message }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => resolve({ status: 0, body: e.message }));
      req.end(payload);
    });
  }

  urlOf(r: Replica): string {
    return `https://127.0.0.1:${r.port}`;
  }

  /** DERP clients on the replica (the hub's own in-process one included), from its /metrics; null if down. */
  async derpClients(r: Replica): Promise<number | null> {
    const m = await this.get(this.urlOf(r), '/metrics', '');
    if (m.status !== 200) return null;
    const line = /^tunnel_relay_derp_clients (\d+)$/m.exec(m.body);
    return line ? Number(line[1]) : null;
  }

  /** The replicas the agent's relay connection is on now (one, or none while it moves). */
  async agentReplicas(): Promise<Replica[]> {
    const counts = await Promise.all(this.replicas.map((r) => this.derpClients(r)));
    return this.replicas.filter((_r, i) => (counts[i] ?? 0) >= 2);
  }

  async stopAll(): Promise<void> {
    await this.agent?.stop('SIGTERM');
    await Promise.all(this.replicas.map((r) => r.proc?.stop('SIGKILL')));
    await this.lb?.stop();
    await this.base?.stop();
    this.upstream?.close();
  }
}
