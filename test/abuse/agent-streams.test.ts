/**
 * Abuse replay: an agent opens streams to the hub. Only the hub opens streams (docs/PROTOCOL.md); a stream an
 * agent opens would have no reader at the hub, and each could pin a whole window (256 KiB) of hub memory, 512 per
 * session. Through the real relay process: an agent's real WireGuard session (the project's AgentSession, admitted
 * through the relay's API) answers a path-proxy request, so the hub has a stream session with it; then the agent
 * opens streams on that session and writes a window's worth into each. Every one is reset at once with
 * RST_PROTOCOL, counted in tunnel_relay_streams_refused_total{reason="protocol_violation"}, the hub holds no stream
 * (tunnel_relay_streams_open), and the hub's own streams to the agent keep working.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../shared/clock.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import type { MuxStream } from '../../shared/net/mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../../shared/net/mux/open-target.js';
import type { AgentSession } from '../../tunnel-client/session/agent-session.js';
import { buildIfStale, cleanup, tempDir } from '../cli-harness.js';
import { waitFor } from '../helpers/wait.js';
import { metrics } from '../hub-udp-fixture.js';
import { type RegisteredAgent, registerAgent, startAgentSession } from './hub-peers.js';
import { api, type ServedRelay, serve } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const scale = abuseScale();
const WINDOW = 256 * 1024;
/** Streams opened at once (the agent's own mux holds at most 512). */
const BATCH = 64;

let relay: ServedRelay;
let agent: RegisteredAgent;
let session: AgentSession;
let answered = 0;

/** The agent's upstream: every hub stream gets OK and a short HTTP answer. */
function answer(s: MuxStream): void {
  s.on('error', () => {});
  readOpenRequest(s, { clock: realClock }).then(
    () => {
      answered++;
      replyOpen(s, OPEN_OK);
      s.resume();
      s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    },
    () => s.destroy(),
  );
}

const proxyGet = () =>
  api(relay.ready.url, 'GET', `/api/v1/clusters/${agent.cluster}/proxy/healthz`, { token: relay.adminKey });

/** `p`, or an error naming `what` when it has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const sample = (m: Map<string, number>, name: string) => m.get(name) ?? 0;
const REFUSED = 'tunnel_relay_streams_refused_total{reason="protocol_violation"}';

beforeAll(async () => {
  buildIfStale();
  relay = await serve(join(tempDir('abuse-streams-'), 'relay'));
  agent = await registerAgent(relay, 'agent-streams');
  session = await startAgentSession(relay, agent, answer);
}, 60_000);

afterAll(async () => {
  await session?.close();
  await relay?.proc.stop();
  await cleanup();
});

describe('abuse: an agent opens streams to the hub', () => {
  it('each is reset at once and counted; the hub holds none; its own streams keep working', async () => {
    const first = await proxyGet();
    expect(first.status).toBe(200);
    expect(first.text).toBe('ok');
    const link = session.endpoint.streams.link(parseIpv4Address(agent.tunnel.hubAddress));
    if (!link) throw new Error('the hub opened no stream session with the agent');
    const m0 = await metrics(relay);
    const batches = 2 * scale;
    for (let b = 0; b < batches; b++) {
      const resets = Array.from({ length: BATCH }, () => {
        const s = link.mux.open();
        const reset = new Promise<Error>((resolve) => s.once('error', resolve));
        s.write(Buffer.alloc(WINDOW, b));
        return reset;
      });
      for (const err of await within(Promise.all(resets), 10_000, `the hub's resets of batch ${b}`))
        expect(err.message).toMatch(/reset by the peer \(protocol-error\)/);
    }
    const n = batches * BATCH;
    await waitFor(
      async () => sample(await metrics(relay), REFUSED) - sample(m0, REFUSED) >= n,
      10_000,
      `${n} streams counted as protocol_violation`,
    );
    const m1 = await metrics(relay);
    expect(sample(m1, REFUSED) - sample(m0, REFUSED)).toBe(n);
    // Nothing of them is held: the hub has no stream open, and it opened only the proxy's.
    expect(sample(m1, 'tunnel_relay_streams_open')).toBe(0);
    expect(
      sample(m1, 'tunnel_relay_streams_opened_total') - sample(m0, 'tunnel_relay_streams_opened_total'),
    ).toBe(0);
    // The session carries on: the hub's next stream to the agent is answered.
    const before = answered;
    const again = await proxyGet();
    expect(again.status).toBe(200);
    expect(answered).toBe(before + 1);
  });
});
