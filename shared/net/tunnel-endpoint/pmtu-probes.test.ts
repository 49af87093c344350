import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { DEFAULT_DIRECT_MTU, DirectPath } from './direct-path.js';
import { PmtuProbes } from './pmtu-probes.js';
import type { PmtuProbe } from './pmtu-search.js';

const KEY = Buffer.alloc(32, 7);

/** PmtuProbes on a fake clock; a "path" that acknowledges every probe up to `pathMtu`; timers counted. */
function setup(o: { firstHop: number | undefined; pathMtu: number; dontFragment?: boolean }) {
  const clock = new FakeClock();
  let timers = 0;
  const setTimer = clock.setTimer.bind(clock);
  clock.setTimer = (ms, fn) => {
    timers++;
    return setTimer(ms, fn);
  };
  const sent: PmtuProbe[] = [];
  const changes: number[] = [];
  const probes: PmtuProbes = new PmtuProbes({
    clock,
    base: DEFAULT_DIRECT_MTU,
    firstHopMtu: () => o.firstHop,
    dontFragment: () => o.dontFragment === true,
    sendProbe: (key, _to, probe) => {
      sent.push(probe);
      if (probe.size <= o.pathMtu) queueMicrotask(() => probes.ack(key, probe.txid, probe.size));
      return true;
    },
    onMtuChange: (_key, direct) => changes.push(direct.mtu),
  });
  const direct = new DirectPath({
    transport: { send: () => true },
    remote: { address: '10.0.0.2', port: 4000 },
  });
  return { clock, probes, direct, sent, changes, timers: () => timers };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('PmtuProbes', () => {
  it('behind a 1,500-byte first hop: no probe, the base MTU, and one timer per raise interval when idle', async () => {
    const t = setup({ firstHop: 1_500, pathMtu: 1_500 });
    t.probes.start(KEY, t.direct);
    await settle();
    const armed = t.timers();
    t.clock.advance(599_000);
    expect(t.sent).toEqual([]);
    expect(t.direct.mtu).toBe(DEFAULT_DIRECT_MTU);
    expect(t.timers()).toBe(armed);
  });

  it('raises the direct path on acks (onMtuChange each time); stop() and a moved remote go back to the base', async () => {
    const t = setup({ firstHop: 9_000, pathMtu: 9_000 });
    t.probes.start(KEY, t.direct);
    await settle();
    expect(t.sent.map((p) => p.size)).toEqual([8_952]);
    expect(t.direct.mtu).toBe(8_952);
    expect(t.changes).toEqual([8_952]);
    expect(t.probes.stats()).toMatchObject({ probes: 1, acks: 1, raised: 1 });
    // The peer roams: the search starts over from the base for the new remote.
    t.direct.setRemote({ address: '10.0.0.3', port: 4001 });
    t.probes.moved(KEY, t.direct);
    expect(t.changes).toEqual([8_952, DEFAULT_DIRECT_MTU]);
    await settle();
    expect(t.direct.mtu).toBe(8_952);
    // The route leaves the direct path: back to the base, no more probes.
    t.probes.stop(KEY);
    expect(t.direct.mtu).toBe(DEFAULT_DIRECT_MTU);
    const sent = t.sent.length;
    t.clock.advance(700_000);
    expect(t.sent.length).toBe(sent);
    expect(t.probes.ack(KEY, Buffer.alloc(12), 8_952)).toBe(false);
  });

  it("an unknown first hop (IPv6): the base without don't-fragment, a search up to what the path acks with it", async () => {
    const fragmenting = setup({ firstHop: undefined, pathMtu: 65_000 });
    fragmenting.probes.start(KEY, fragmenting.direct);
    await settle();
    fragmenting.clock.advance(700_000);
    expect(fragmenting.sent).toEqual([]);
    expect(fragmenting.direct.mtu).toBe(DEFAULT_DIRECT_MTU);

    const df = setup({ firstHop: undefined, pathMtu: 9_000, dontFragment: true });
    df.probes.start(KEY, df.direct);
    await settle();
    for (let i = 0; i < 20; i++) {
      df.clock.advance(10_000);
      await settle();
    }
    expect(df.sent[0]?.size).toBe(8_952);
    expect(df.direct.mtu).toBe(8_952);
    expect(df.sent.some((p) => p.size > 9_000)).toBe(true);
  });
});
