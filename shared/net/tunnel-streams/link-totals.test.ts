import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock.js';
import { parseIpv4Address } from '../ip/index.js';
import type { MuxStream } from '../mux/mux-stream.js';
import { OPEN_OK, readOpenRequest, replyOpen } from '../mux/open-target.js';
import { StreamBinding } from './stream-binding.js';

const HUB = parseIpv4Address('100.64.0.1');
const AGENT = parseIpv4Address('100.64.0.2');

/** Hub and agent bindings back to back; `lose(n)` says whether the n-th hub -> agent packet is lost. */
function pair(lose: (n: number) => boolean) {
  let sent = 0;
  const hub: StreamBinding = new StreamBinding({
    role: 'client',
    local: HUB,
    clock: realClock,
    send: (p) => {
      if (!lose(sent++)) setImmediate(() => agent.input(p));
      return true;
    },
    arq: { minRtoMs: 20, initialRtoMs: 40 },
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
    onStream: (s: MuxStream) => {
      readOpenRequest(s, { clock: realClock }).then(() => {
        replyOpen(s, OPEN_OK);
        s.on('data', () => {});
        s.on('end', () => s.end());
      });
    },
  });
  return { hub, agent };
}

async function sendAndClose(hub: StreamBinding, bytes: number): Promise<void> {
  const s = await hub.open(AGENT, 'svc:1');
  await new Promise<void>((resolve, reject) => {
    s.on('error', reject);
    s.on('end', () => resolve());
    s.resume();
    s.end(Buffer.alloc(bytes, 7));
  });
}

const open: StreamBinding[] = [];
afterEach(() => {
  for (const b of open.splice(0)) b.close();
});

describe('StreamBinding.linkTotals', () => {
  it('keeps the counters of closed links: streams opened and retransmissions never go backwards', async () => {
    // Every 7th hub -> agent packet is lost: a real cause for retransmissions.
    const { hub, agent } = pair((n) => n % 7 === 3);
    open.push(hub, agent);
    await sendAndClose(hub, 300_000);
    await sendAndClose(hub, 1000);
    const live = hub.linkTotals();
    expect(live.mux.streamsOpened).toBe(2);
    expect(live.arq.retransmitsTimeout + live.arq.retransmitsFast).toBeGreaterThan(0);
    expect(hub.streamCount).toBe(0);
    expect(hub.linkCount).toBe(1);

    hub.drop(AGENT);
    expect(hub.linkCount).toBe(0);
    const closed = hub.linkTotals();
    expect(closed.mux.streamsOpened).toBe(2);
    expect(closed.arq.retransmitsTimeout).toBeGreaterThanOrEqual(live.arq.retransmitsTimeout);
    expect(closed.arq.retransmitsFast).toBeGreaterThanOrEqual(live.arq.retransmitsFast);
    expect(closed.arq.datagramsOut).toBeGreaterThanOrEqual(live.arq.datagramsOut);

    // A new link (new conv) adds to the closed one's totals.
    await sendAndClose(hub, 1000);
    const again = hub.linkTotals();
    expect(hub.stats.linksStarted).toBe(2);
    expect(again.mux.streamsOpened).toBe(3);
    expect(again.arq.datagramsOut).toBeGreaterThan(closed.arq.datagramsOut);
    expect(again.arq.retransmitsTimeout).toBeGreaterThanOrEqual(closed.arq.retransmitsTimeout);
  });

  it('counts open streams over live links', async () => {
    const { hub, agent } = pair(() => false);
    open.push(hub, agent);
    const a = await hub.open(AGENT, 'svc:1');
    const b = await hub.open(AGENT, 'svc:2');
    expect(hub.streamCount).toBe(2);
    a.destroy();
    b.destroy();
    hub.close();
    expect(hub.streamCount).toBe(0);
    expect(hub.linkTotals().mux.streamsOpened).toBe(2);
  });
});
