/**
 * The relay keeps a connection's ServerKey challenge only until ClientInfo has been checked: a second
 * ClientInfo on the same connection, even one echoing the right challenge, is a protocol error (4002).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeServerKey, FrameType } from '../shared/net/derp/frames.js';
import { encodeClientInfo, sharedKey } from '../shared/net/derp/handshake.js';
import { rawClient, startRelay, type TestRelay } from './derp-fixtures.js';
import { waitFor } from './helpers/wait.js';

let relay: TestRelay | undefined;

afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

describe('DERP ClientInfo', () => {
  it('a second ClientInfo with the echoed challenge closes the connection (4002) and unregisters it', async () => {
    relay = await startRelay();
    const raw = await rawClient(relay, true);
    relay.admitted.add(raw.keyPair.publicKey.toString('base64'));
    await waitFor(() => raw.frames.some((f) => f.type === FrameType.ServerInfo), 5000, 'server info');
    expect(relay.derp.stats.clients).toBe(1);
    const sk = decodeServerKey(raw.frames[0]!.body);
    expect(sk.challenge.length).toBeGreaterThan(0);
    raw.ws.send(
      encodeClientInfo(raw.keyPair.publicKey, sharedKey(sk.serverKey, raw.keyPair.privateKey), sk.challenge),
    );
    expect((await raw.closed).code).toBe(4002);
    expect(relay.derp.stats.protocolErrors).toBe(1);
    expect(relay.derp.stats.authFailures).toBe(0);
    await waitFor(() => relay!.derp.stats.clients === 0, 5000, 'unregistered');
  });
});
