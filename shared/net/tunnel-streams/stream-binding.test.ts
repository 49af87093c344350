import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock.js';
import { parseIpv4Address } from '../ip/index.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../mux/open-target.js';
import { STREAM_PATH_TUNING, STREAMS_PORT, type StreamPathKind } from './constants.js';
import { pickStreamDatagram, wrapStreamDatagram } from './inner-udp.js';
import { StreamBinding } from './stream-binding.js';

const HUB = parseIpv4Address('100.64.0.1');
const AGENT = parseIpv4Address('100.64.0.2');

/** A hub and an agent binding wired back to back (each packet delivered on a later tick, like a network). */
function pair(onStream: (s: MuxStream) => void, hubKind?: StreamPathKind) {
  const hub: StreamBinding = new StreamBinding({
    ...(hubKind ? { kindFor: () => hubKind } : {}),
    role: 'client',
    local: HUB,
    clock: realClock,
    send: (p) => {
      setImmediate(() => agent.input(p));
      return true;
    },
  });
  const agent: StreamBinding = new StreamBinding({
    role: 'server',
    local: AGENT,
    clock: realClock,
    send: (p) => {
      setImmediate(() => hub.input(p));
      return true;
    },
    accept: (r) => r === HUB,
    onStream: (s) => onStream(s),
  });
  return { hub, agent };
}

/** Agent side: accept every target and echo bytes back, upper-cased. */
function echoUpper(s: MuxStream): void {
  readOpenRequest(s, { clock: realClock }).then((target) => {
    replyOpen(s, OPEN_OK);
    s.write(`target=${target};`);
    s.on('data', (c: Buffer) => s.write(c.toString().toUpperCase()));
    s.on('end', () => s.end());
  });
}

function readAll(s: MuxStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let t = '';
    s.on('data', (c: Buffer) => {
      t += c.toString();
    });
    s.on('end', () => resolve(t));
    s.on('error', reject);
  });
}

const open: StreamBinding[] = [];
afterEach(() => {
  for (const b of open.splice(0)) b.close();
});

describe('StreamBinding', () => {
  it('carries a stream hub -> agent inside inner UDP packets, half-close included', async () => {
    const { hub, agent } = pair(echoUpper);
    open.push(hub, agent);
    const s = await hub.open(AGENT, 'svc:80');
    const got = readAll(s);
    s.end('hello');
    expect(await got).toBe('target=svc:80;HELLO');
    expect(agent.stats.linksStarted).toBe(1);
    expect(hub.link(AGENT)?.conv).toBe(agent.link(HUB)?.conv);
  });

  it("follows the peer's path: a link starts with its kind's tuning and switches tuning and MTU at once", async () => {
    const { hub, agent } = pair(echoUpper, 'direct');
    open.push(hub, agent);
    const s = await hub.open(AGENT, 'svc:80');
    const hubArq = hub.link(AGENT)!.arq;
    const agentArq = agent.link(HUB)!.arq;
    const tuning = (arq: typeof hubArq) => ({ ack: arq.ackPolicy, queueTargetMs: arq.queueTargetMs });
    expect(tuning(hubArq)).toEqual(STREAM_PATH_TUNING.direct);
    expect(tuning(agentArq)).toEqual(STREAM_PATH_TUNING.relayed);
    agent.setPath(HUB, { kind: 'direct', mtu: 1420 });
    expect(tuning(agentArq)).toEqual(STREAM_PATH_TUNING.direct);
    expect(agentArq.mtu).toBe(1420 - 28);
    const got = readAll(s);
    const body = 'x'.repeat(200_000);
    s.write(body.slice(0, 100_000));
    hub.setPath(AGENT, { kind: 'relayed', mtu: 65_000 });
    expect(tuning(hubArq)).toEqual(STREAM_PATH_TUNING.relayed);
    s.end(body.slice(100_000));
    expect(await got).toBe(`target=svc:80;${body.toUpperCase()}`);
  });

  it('agent adopts a new conv when the hub restarts its session; stale datagrams are dropped at the hub', async () => {
    const { hub, agent } = pair(echoUpper);
    open.push(hub, agent);
    const s1 = await hub.open(AGENT, 'a:1');
    s1.end();
    await readAll(s1);
    const firstConv = hub.link(AGENT)?.conv;
    hub.drop(AGENT);
    const s2 = await hub.open(AGENT, 'b:2');
    const got = readAll(s2);
    s2.end('x');
    expect(await got).toBe('target=b:2;X');
    expect(hub.link(AGENT)?.conv).not.toBe(firstConv);
    expect(agent.link(HUB)?.conv).toBe(hub.link(AGENT)?.conv);
    expect(agent.stats.linksReplaced).toBe(1);
  });

  it('a pending open fails at once with CLOSED when its session is dropped', async () => {
    const { hub, agent } = pair(() => {}); // the agent never answers the OPEN
    open.push(hub, agent);
    const pending = hub.open(AGENT, 'svc:80', { timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    hub.drop(AGENT);
    await expect(pending).rejects.toMatchObject({ code: 'CLOSED' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(hub.linkCount).toBe(0);
  });

  it('the hub resets every stream the agent opens at once (counted), and keeps its own streams working', async () => {
    const { hub, agent } = pair(echoUpper);
    open.push(hub, agent);
    const first = await hub.open(AGENT, 'svc:80');
    const n = 12;
    const link = agent.link(HUB)!;
    const resets = Array.from({ length: n }, () => {
      const s = link.mux.open();
      const err = new Promise<Error>((resolve) => s.once('error', resolve));
      s.write(Buffer.alloc(256 * 1024, 1));
      return err;
    });
    for (const err of await Promise.all(resets)) expect(err.message).toMatch(/protocol-error/);
    expect(hub.linkTotals().mux.refused.protocolViolation).toBe(n);
    expect(hub.linkTotals().mux.streamsAccepted).toBe(0);
    expect(hub.streamCount).toBe(1); // the hub's own stream only
    const got = readAll(first);
    first.end('hub');
    expect(await got).toBe('target=svc:80;HUB');
  });

  it('a server binding with no stream handler refuses the streams it would leave unread', async () => {
    const hub: StreamBinding = new StreamBinding({
      role: 'client',
      local: HUB,
      clock: realClock,
      send: (p) => {
        setImmediate(() => agent.input(p));
        return true;
      },
    });
    const agent: StreamBinding = new StreamBinding({
      role: 'server',
      local: AGENT,
      clock: realClock,
      send: (p) => {
        setImmediate(() => hub.input(p));
        return true;
      },
    });
    open.push(hub, agent);
    await expect(hub.open(AGENT, 'svc:80', { timeoutMs: 5_000 })).rejects.toMatchObject({
      code: 'STREAM_RESET',
    });
    expect(agent.linkTotals().mux.refused.protocolViolation).toBe(1);
    expect(agent.streamCount).toBe(0);
  });

  it('server refuses sessions from peers it does not accept, and ignores non-stream packets', () => {
    const { hub, agent } = pair(echoUpper);
    open.push(hub, agent);
    const seg = Buffer.alloc(24);
    seg.writeUInt32LE(7, 0);
    const other = parseIpv4Address('100.64.0.9');
    expect(agent.input(wrapStreamDatagram(other, AGENT, seg))).toBe(true);
    expect(agent.stats.dropped.notAccepted).toBe(1);
    expect(agent.input(wrapStreamDatagram(HUB, AGENT, seg, 53))).toBe(false);
    expect(agent.stats.dropped['wrong-port']).toBe(1);
    expect(agent.input(wrapStreamDatagram(HUB, other, seg))).toBe(false);
    expect(agent.stats.dropped['wrong-address']).toBe(1);
    expect(agent.linkCount).toBe(0);
  });

  it('pickStreamDatagram never throws and round-trips what wrapStreamDatagram built', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const r = pickStreamDatagram(Buffer.from(bytes), AGENT);
        expect(typeof r === 'string' || r.payload.length <= bytes.length).toBe(true);
      }),
    );
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 2000 }),
        fc.integer({ min: 1, max: 0xfffffffe }),
        (data, src) => {
          const r = pickStreamDatagram(wrapStreamDatagram(src, AGENT, data), AGENT, STREAMS_PORT);
          expect(typeof r).toBe('object');
          if (typeof r === 'object') {
            expect(r.src).toBe(src >>> 0);
            expect(Buffer.compare(r.payload, Buffer.from(data))).toBe(0);
          }
        },
      ),
    );
  });
});
