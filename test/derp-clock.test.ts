/**
 * The relay's timers driven by FakeClock over real sockets: handshake timeout, the server's ping sweep and
 * the client's dead-connection detection fire exactly when the clock says, with no sleeping for them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../shared/clock.js';
import { FrameType } from '../shared/net/derp/frames.js';
import {
  type BlackholeProxy,
  blackholeProxy,
  rawClient,
  startClient,
  startRelay,
  type TestClient,
  type TestRelay,
} from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
const clients: TestClient[] = [];
const proxies: BlackholeProxy[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.client.close();
  for (const p of proxies.splice(0)) await p.close();
  await relay?.close();
  relay = undefined;
});

describe('DERP relay timers on a fake clock', () => {
  it('closes a silent connection exactly at the handshake timeout', async () => {
    const clock = new FakeClock();
    relay = await startRelay({ clock, limits: { handshakeTimeoutMs: 5000 } });
    const raw = await rawClient(relay, false);
    await waitFor(() => raw.frames.length === 1, 5000, 'server key');
    clock.advance(4999);
    expect(relay.derp.stats.handshakeTimeouts).toBe(0);
    clock.advance(1);
    expect(relay.derp.stats.handshakeTimeouts).toBe(1);
    expect((await raw.closed).code).toBe(4005);
  });

  it('the ping sweep keeps answering clients and terminates one that stops reading', async () => {
    const clock = new FakeClock();
    relay = await startRelay({ clock, limits: { pingIntervalMs: 20_000 } });
    const raw = await rawClient(relay, true);
    relay.admitted.add(raw.keyPair.publicKey.toString('base64'));
    await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'handshake');
    for (let i = 0; i < 3; i++) {
      const keepAlives = raw.frames.filter((f) => f.type === FrameType.KeepAlive).length;
      clock.advance(20_000); // ping + KeepAlive; ws answers the ping by itself
      await waitFor(
        () => raw.frames.filter((f) => f.type === FrameType.KeepAlive).length === keepAlives + 1,
        5000,
        'keepalive',
      );
      await new Promise((r) => setTimeout(r, 20)); // let the pong travel back
    }
    expect(relay.derp.stats.pingTimeouts).toBe(0);
    raw.ws.pause(); // stops reading: no more pongs
    clock.advance(20_000);
    clock.advance(20_000);
    expect(relay.derp.stats.pingTimeouts).toBe(1);
    expect(relay.derp.isConnected(raw.keyPair.publicKey)).toBe(false);
    raw.ws.terminate();
  });

  it('the client pings after pingIntervalMs of silence and gives up at deadAfterMs', async () => {
    relay = await startRelay({ limits: { pingIntervalMs: 600_000 } });
    const bh = await blackholeProxy(Number(new URL(relay.url).port));
    proxies.push(bh);
    const clock = new FakeClock();
    const c = startClient(relay, {
      url: `wss://127.0.0.1:${bh.port}/derp`,
      clock,
      pingIntervalMs: 5000,
      deadAfterMs: 12_000,
      random: () => 0.5,
    });
    clients.push(c);
    await c.client.whenConnected(5000);
    const bytesBefore = relay.derp.stats.bytesIn;
    clock.advance(2500); // tick: 2.5 s idle, nothing sent
    await new Promise((r) => setTimeout(r, 50));
    expect(relay.derp.stats.bytesIn).toBe(bytesBefore);
    clock.advance(2500); // tick: 5 s idle, a DERP Ping
    await waitFor(() => relay!.derp.stats.bytesIn > bytesBefore, 5000, 'ping at the relay');
    await new Promise((r) => setTimeout(r, 50)); // its Pong is a sign of life: idle restarts at 5 s
    bh.setBlackhole(true); // from now on nothing arrives
    clock.advance(11_999);
    await new Promise((r) => setTimeout(r, 100)); // a termination would surface as a close by now
    expect(c.client.connected).toBe(true);
    clock.advance(2_501); // the tick at 12.5 s of silence terminates the socket
    await waitFor(() => c.client.state === 'reconnecting', 5000, 'reconnecting');
    const ev = c.states.find((s) => s.state === 'reconnecting')!;
    expect(ev.error?.code).toBe('TIMEOUT');
    expect(ev.delayMs).toBe(375); // attempt 1 with random 0.5: 250 + 0.5 * 250
  });
});
