/**
 * The ServerKey challenge: a ClientInfo recorded on one connection is refused on another, a ClientInfo without
 * the challenge is refused by default and accepted with requireChallenge: false (stock DERP clients).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { generateKeyPair, type KeyPair } from '../shared/keys.js';
import { FrameParser } from '../shared/net/derp/frame-parser.js';
import { decodeServerKey, FRAME_HEADER_LEN, FrameType } from '../shared/net/derp/frames.js';
import { encodeClientInfo, sharedKey } from '../shared/net/derp/handshake.js';
import { startRelay, type TestRelay } from './derp-fixtures.js';

let relay: TestRelay | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await relay?.close();
  relay = undefined;
});

/** Connects, waits for ServerKey, sends whatever `clientInfo` builds; resolves with ServerInfo seen or the close code. */
async function attempt(
  r: TestRelay,
  clientInfo: (serverKey: Buffer, challenge: Buffer) => Buffer,
): Promise<{ result: 'serverInfo' | number; sent: Buffer }> {
  const ws = new WebSocket(r.url, 'derp', { rejectUnauthorized: false });
  sockets.push(ws);
  ws.on('error', () => {});
  let sent: Buffer = Buffer.alloc(0);
  const result = await new Promise<'serverInfo' | number>((resolve) => {
    const parser = new FrameParser((type, f) => {
      const body = f.subarray(FRAME_HEADER_LEN);
      if (type === FrameType.ServerKey) {
        const sk = decodeServerKey(body);
        sent = clientInfo(Buffer.from(sk.serverKey), Buffer.from(sk.challenge));
        ws.send(sent);
      } else if (type === FrameType.ServerInfo) resolve('serverInfo');
    });
    ws.on('message', (d: Buffer) => parser.push(d));
    ws.on('close', (code) => resolve(code));
  });
  return { result, sent };
}

const honest = (kp: KeyPair, echo: boolean) => (serverKey: Buffer, challenge: Buffer) =>
  encodeClientInfo(kp.publicKey, sharedKey(serverKey, kp.privateKey), echo ? challenge : Buffer.alloc(0));

describe('DERP ServerKey challenge', () => {
  it('refuses a ClientInfo replayed from another connection (4001)', async () => {
    relay = await startRelay();
    const kp = generateKeyPair();
    relay.admitted.add(kp.publicKey.toString('base64'));
    const first = await attempt(relay, honest(kp, true));
    expect(first.result).toBe('serverInfo');
    const replay = await attempt(relay, () => first.sent);
    expect(replay.result).toBe(4001);
    expect(relay.derp.stats.authFailures).toBe(1);
  });

  it('refuses a ClientInfo without the challenge by default, accepts it with requireChallenge: false', async () => {
    relay = await startRelay();
    const kp = generateKeyPair();
    relay.admitted.add(kp.publicKey.toString('base64'));
    expect((await attempt(relay, honest(kp, false))).result).toBe(4001);
    await relay.restart({ requireChallenge: false });
    expect((await attempt(relay, honest(kp, false))).result).toBe('serverInfo');
    // A wrong challenge is still refused when one is given.
    const wrong = (serverKey: Buffer) =>
      encodeClientInfo(kp.publicKey, sharedKey(serverKey, kp.privateKey), Buffer.alloc(16, 7));
    expect((await attempt(relay, wrong)).result).toBe(4001);
  });
});
