import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../../shared/clock.js';
import { parseIpv4Address } from '../../../shared/net/ip/index.js';
import { GOAWAY_NORMAL } from '../../../shared/net/mux/frame.js';
import type { MuxStream } from '../../../shared/net/mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../../../shared/net/mux/open-target.js';
import { StreamBinding } from '../../../shared/net/tunnel-streams/stream-binding.js';
import type { RelayContext } from '../../context/context.js';
import type { ClusterRecord } from '../../control/store/types.js';
import { HubStreams } from './hub-streams.js';

const AGENT = '100.64.0.7';
const HUB = '100.64.0.1';
const KEY = 'A'.repeat(43) + '=';

interface World {
  streams: HubStreams;
  hub: StreamBinding;
  /** The agent's binding: its current run (restartAgent replaces it). */
  agent: StreamBinding;
  hooks: EventEmitter;
  live: { session: boolean; relay: boolean };
}

const worlds: World[] = [];
afterEach(() => {
  for (const w of worlds.splice(0)) {
    w.streams.close();
    w.hub.close();
    w.agent.close();
  }
});

/** An agent run's stream binding: it answers every open and echoes the stream's bytes. */
function agentRun(hub: () => StreamBinding): StreamBinding {
  return new StreamBinding({
    role: 'server',
    local: parseIpv4Address(AGENT),
    clock: realClock,
    send: (p) => {
      setImmediate(() => hub().input(p));
      return true;
    },
    onStream: (s: MuxStream) => {
      readOpenRequest(s, { clock: realClock }).then(() => {
        replyOpen(s, OPEN_OK);
        s.on('data', (c: Buffer) => s.write(c));
      });
    },
  });
}

/** A HubStreams over a hub binding whose packets go straight to an agent binding that echoes. */
function world(clusters: Record<string, Partial<ClusterRecord>>, graceMs = 300): World {
  const hooks = new EventEmitter();
  const live = { session: true, relay: true };
  const store = {
    getCluster: async (name: string) =>
      clusters[name] ? ({ name, ...clusters[name] } as ClusterRecord) : null,
  };
  const hub: StreamBinding = new StreamBinding({
    role: 'client',
    local: parseIpv4Address(HUB),
    clock: realClock,
    send: (p) => {
      setImmediate(() => w.agent.input(p));
      return true;
    },
  });
  const agent = agentRun(() => hub);
  const streams = new HubStreams({
    ctx: { store, hooks } as unknown as Pick<RelayContext, 'store' | 'hooks'>,
    clock: realClock,
    disconnectGraceMs: graceMs,
    restartWaitMs: 1_000,
    dataPlane: {
      binding: hub,
      isSessionUp: () => live.session,
      isRelayConnected: () => live.relay,
    },
  });
  const w: World = { streams, hub, agent, hooks, live };
  worlds.push(w);
  return w;
}

/** The agent process dies without a word (kill -9) and a new run takes its place. */
function restartAgent(w: World): void {
  w.agent.close();
  w.agent = agentRun(() => w.hub);
}

async function echoes(s: MuxStream, text: string): Promise<string> {
  s.write(text);
  const [d] = (await new Promise((r) => s.once('data', (c) => r([c])))) as [Buffer];
  return d.toString();
}

/** A GoAway for any reason but a drain. */
const GOAWAY_PROTOCOL_ERROR = GOAWAY_NORMAL + 1;

const accepted = { status: 'Accepted', address: AGENT, publicKey: KEY } as const;

describe('HubStreams', () => {
  it('fails fast: NOT_FOUND, AGENT_NOT_CONNECTED without an agent or a live session', async () => {
    const w = world({ pending: { status: 'Pending', address: null, publicKey: null }, edge: accepted });
    await expect(w.streams.open('nope', '@upstream')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(w.streams.open('pending', '@upstream')).rejects.toMatchObject({
      code: 'AGENT_NOT_CONNECTED',
    });
    w.live.session = false;
    await expect(w.streams.open('edge', '@upstream')).rejects.toMatchObject({ code: 'AGENT_NOT_CONNECTED' });
    expect(w.streams.binding.linkCount).toBe(0);
  });

  it('ends open streams with AGENT_NOT_CONNECTED once the relay connection has been gone for the grace', async () => {
    const w = world({ edge: accepted }, 300);
    const s = await w.streams.open('edge', '@upstream');
    s.write('x');
    await new Promise((r) => s.once('data', r));
    const errored = new Promise<Error & { code?: string }>((r) => s.once('error', r));
    const lostAt = Date.now();
    w.live.relay = false;
    const err = await errored;
    expect(err.code).toBe('AGENT_NOT_CONNECTED');
    expect(Date.now() - lostAt).toBeGreaterThanOrEqual(300);
    expect(Date.now() - lostAt).toBeLessThan(3_000);
  });

  it('keeps streams across a relay blip shorter than the grace', async () => {
    const w = world({ edge: accepted }, 1_500);
    const s = await w.streams.open('edge', '@upstream');
    w.live.relay = false;
    await new Promise((r) => setTimeout(r, 1_100));
    w.live.relay = true;
    await new Promise((r) => setTimeout(r, 1_100));
    s.write('still here');
    const [d] = (await new Promise((r) => s.once('data', (c) => r([c])))) as [Buffer];
    expect(d.toString()).toBe('still here');
  });

  it('ends streams at once when the cluster is deleted', async () => {
    const w = world({ edge: accepted });
    const s = await w.streams.open('edge', '@upstream');
    const errored = new Promise<Error & { code?: string }>((r) => s.once('error', r));
    w.hooks.emit('cluster-deleted', { cluster: 'edge', publicKey: KEY });
    expect((await errored).code).toBe('AGENT_NOT_CONNECTED');
  });

  it('a new agent run replaces the stale session at once: the next open goes to a fresh one', async () => {
    const w = world({ edge: accepted });
    const old = await w.streams.open('edge', '@upstream');
    expect(await echoes(old, 'first run')).toBe('first run');
    const staleConv = w.hub.link(parseIpv4Address(AGENT))!.conv;
    const oldEnded = new Promise<Error & { code?: string }>((r) => old.once('error', r));
    restartAgent(w);
    // Before any open: the stale stream ends with the replacement, not with a failed open on it.
    w.streams.replaceSession({ cluster: 'edge', address: AGENT });
    expect((await oldEnded).code).toBe('CLOSED');
    expect(w.hub.link(parseIpv4Address(AGENT))).toBeUndefined();
    const s = await w.streams.open('edge', '@upstream');
    expect(await echoes(s, 'second run')).toBe('second run');
    expect(w.hub.link(parseIpv4Address(AGENT))!.conv).not.toBe(staleConv);
    expect(w.hub.stats.linksStarted).toBe(2);
  });

  it('an open that finds the session going away (not a drain) drops it and opens on a fresh one', async () => {
    const w = world({ edge: accepted });
    const first = await w.streams.open('edge', '@upstream');
    expect(await echoes(first, 'before')).toBe('before');
    const remote = parseIpv4Address(AGENT);
    const goingAway = w.hub.link(remote)!;
    const heard = new Promise((r) => goingAway.mux.once('goaway', r));
    w.agent.link(parseIpv4Address(HUB))!.mux.goAway(GOAWAY_PROTOCOL_ERROR);
    await heard;
    const s = await w.streams.open('edge', '@upstream');
    expect(await echoes(s, 'after')).toBe('after');
    expect(w.hub.link(remote)).not.toBe(goingAway);
    expect(goingAway.closed).toBe(true);
  });

  it('a draining agent (GoAway, normal code) gets no new stream: opens wait for its next run', async () => {
    const w = world({ edge: accepted });
    const drains: unknown[] = [];
    w.hooks.on('agent-draining', (d) => drains.push(d));
    const inFlight = await w.streams.open('edge', '@upstream');
    expect(await echoes(inFlight, 'before')).toBe('before');
    const draining = w.hub.link(parseIpv4Address(AGENT))!;
    const heard = new Promise((r) => draining.mux.once('goaway', r));
    w.agent.link(parseIpv4Address(HUB))!.mux.goAway();
    await heard;
    const waiting = w.streams.open('edge', '@upstream');
    // The stream in flight carries on while the agent drains.
    expect(await echoes(inFlight, 'still draining')).toBe('still draining');
    await new Promise((r) => setTimeout(r, 100));
    expect(w.agent.link(parseIpv4Address(HUB))!.mux.streamCount).toBe(1);
    restartAgent(w);
    w.streams.replaceSession({ cluster: 'edge', address: AGENT });
    const s = await waiting;
    expect(await echoes(s, 'next run')).toBe('next run');
    expect(w.hub.link(parseIpv4Address(AGENT))).not.toBe(draining);
    // The relay was told when the drain began and ended (the fleet sends no hop to it meanwhile).
    expect(drains).toEqual([
      { cluster: 'edge', publicKey: KEY, draining: true },
      { cluster: 'edge', publicKey: KEY, draining: false },
    ]);
  });

  it('an agent that drains and never comes back: opens fail AGENT_NOT_CONNECTED after the wait', async () => {
    const w = world({ edge: accepted });
    const first = await w.streams.open('edge', '@upstream');
    expect(await echoes(first, 'before')).toBe('before');
    const heard = new Promise((r) => w.hub.link(parseIpv4Address(AGENT))!.mux.once('goaway', r));
    w.agent.link(parseIpv4Address(HUB))!.mux.goAway();
    await heard;
    w.agent.close();
    w.live.session = false;
    const started = Date.now();
    await expect(w.streams.open('edge', '@upstream')).rejects.toMatchObject({ code: 'AGENT_NOT_CONNECTED' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
