/**
 * DerpClient.reconnectNow against a real DERP server over TLS: a client waiting out a long backoff after its relay went
 * away connects at once when told the relay answers again (the agent calls it when its lease renewal succeeds, so the
 * tunnel is back as soon as the relay is, not at the end of the wait). While connected it does nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startClient, startRelay, type TestRelay } from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

describe('DerpClient.reconnectNow', () => {
  it('cuts a long backoff short once the relay is back; a connected client is left alone', async () => {
    relay = await startRelay();
    const port = Number(new URL(relay.url).port);
    const keyPair = relay.keyPair;
    // Every wait at least 60 s: without reconnectNow the client would not be back within this test's time.
    const c = startClient(relay, { backoff: { baseMs: 120_000, maxMs: 120_000 } });
    try {
      await c.client.whenConnected(5_000);
      expect(c.client.reconnectNow()).toBe(false);
      await relay.close();
      // The first retry comes soon; the one after it fails (nothing listens) waits the long backoff.
      const longWait = () => c.states.some((s) => s.state === 'reconnecting' && (s.delayMs ?? 0) >= 60_000);
      await waitFor(longWait, 10_000, 'a long backoff');
      relay = await startRelay({ port, keyPair });
      relay.admitted.add(c.keyPair.publicKey.toString('base64'));
      const t0 = Date.now();
      expect(c.client.reconnectNow()).toBe(true);
      await c.client.whenConnected(5_000);
      expect(Date.now() - t0).toBeLessThan(5_000);
    } finally {
      c.client.close();
    }
  }, 30_000);
});
