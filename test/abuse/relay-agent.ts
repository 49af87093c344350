/**
 * For the abuse replays of the hub proxies: the real `tunnel-relay serve` process and one real
 * `tunnel-client` agent per cluster joined to it (upstream given by the test), the relay's certificate (checked
 * against the pin of its ready line), API calls with any key, and raw TLS clients of the relay port.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  run,
  startServe,
  tempDir,
  waitConnected,
} from '../cli-harness.js';

export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  body: any;
}

export interface CreatedKey {
  id: string;
  token: string;
  /** Wall-clock ms, or null for a key without expiry. */
  expiresAt: number | null;
}

export interface RelayWithAgent {
  url: string;
  /** PEM of the relay's self-signed certificate. */
  ca: string;
  adminKey: string;
  /** The clusters joined, in the order given; each has its own agent. */
  clusters: string[];
  api(method: string, path: string, opts?: { token?: string; body?: unknown }): Promise<ApiAnswer>;
  createKey(role: string, expiresIn?: string): Promise<CreatedKey>;
  /** A TLS connection to the relay port (resolves once the handshake is done). */
  connectTls(): Promise<tls.TLSSocket>;
  stop(): Promise<void>;
}

/** The relay's certificate as PEM, read off a TLS handshake and checked against the ready line's pin. */
async function fetchCertificate(url: string, pin: string): Promise<string> {
  const u = new URL(url);
  const socket = tls.connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  const der = socket.getPeerCertificate().raw;
  socket.destroy();
  const seen = `sha256:${createHash('sha256').update(der).digest('hex')}`;
  if (seen !== pin) throw new Error(`the relay presented ${seen}, its ready line pins ${pin}`);
  return new X509Certificate(der).toString();
}

/** One cluster to create, with the flags and environment of its agent. */
export interface AgentSpec {
  cluster: string;
  flags?: string[];
  env?: Record<string, string>;
}

export async function startRelayWithAgents(opts: {
  agents: AgentSpec[];
  upstream: string;
}): Promise<RelayWithAgent> {
  buildIfStale();
  const dir = tempDir('abuse-relay-');
  const { proc: relay, ready } = await startServe(join(dir, 'relay'), '127.0.0.1:0');
  const adminKey = ready.adminKey ?? '';
  const adminEnv = cleanEnv({
    TUNNEL_RELAY_URL: ready.url,
    TUNNEL_ACCESS_KEY: adminKey,
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  });
  const ca = await fetchCertificate(ready.url, ready.caPin);
  const dispatcher = new Agent({ connect: { ca, servername: 'localhost' } });
  const api: RelayWithAgent['api'] = async (method, path, o = {}) => {
    const res = await request(`${ready.url}${path}`, {
      method: method as 'GET',
      headers: {
        authorization: `Bearer ${o.token ?? adminKey}`,
        ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
      dispatcher,
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text.startsWith('{') ? JSON.parse(text) : text };
  };

  const joinOne = async ({ cluster, flags = [], env = {} }: AgentSpec): Promise<Proc> => {
    const created = await run(RELAY_BIN, ['cluster', 'create', cluster, '--output', 'json'], adminEnv);
    if (created.code !== 0) throw new Error(`cluster create: ${created.stderr}`);
    const joinArgs = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
    const stateDir = join(tempDir('abuse-agent-'), 'state');
    const args = [...joinArgs, '--state-dir', stateDir, '--upstream', opts.upstream, ...flags, '--wait'];
    const joined = await run(CLIENT_BIN, args, cleanEnv(env));
    if (joined.code !== 0) throw new Error(`join: ${joined.stderr}`);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv(env));
    await waitConnected(adminEnv, cluster);
    return agent;
  };
  const agents = await Promise.all(opts.agents.map(joinOne));

  return {
    url: ready.url,
    ca,
    adminKey,
    clusters: opts.agents.map((a) => a.cluster),
    api,
    async createKey(role, expiresIn) {
      const r = await api('POST', '/api/v1/tokens', { body: { role, ...(expiresIn ? { expiresIn } : {}) } });
      if (r.status !== 201) throw new Error(`token create: ${r.status} ${JSON.stringify(r.body)}`);
      return {
        id: r.body.id,
        token: r.body.token,
        expiresAt: r.body.expiresAt === null ? null : Date.parse(r.body.expiresAt),
      };
    },
    connectTls() {
      const u = new URL(ready.url);
      return new Promise((resolve, reject) => {
        const s = tls.connect({ host: u.hostname, port: Number(u.port), ca, servername: 'localhost' });
        s.once('secureConnect', () => resolve(s));
        s.once('error', reject);
      });
    },
    async stop() {
      for (const agent of agents) await agent.stop();
      await relay.stop();
      await dispatcher.close();
      await cleanup();
    },
  };
}
