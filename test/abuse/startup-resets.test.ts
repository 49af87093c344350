/**
 * Connections reset while the relay starts: `serve` holds its TLS port from the first moment of its start
 * (relay/ops/port-hold.ts) while it makes its certificate and keys and connects to its store; a client that connects
 * then and resets (a load balancer's health check, or anyone) must not crash it. Replayed against the real binary
 * with a PostgreSQL store that keeps the start waiting (a server that accepts and says nothing for 1.5 s, then
 * hangs up): connections are opened and reset on the held port every few milliseconds meanwhile, and the start must
 * end for its own reason (BAD_CONFIG naming the store), not an unhandled ECONNRESET.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanEnv, cleanup, Proc, RELAY_BIN, tempDir } from '../cli-harness.js';
import { freePort } from '../helpers/tinyproxy.js';
import { abuseScale } from './scale.js';

const STORE_SILENCE_MS = 1_500;
let silentStore: Server;
let storePort: number;

beforeAll(async () => {
  buildIfStale();
  silentStore = createServer((s: Socket) => {
    s.on('error', () => {});
    setTimeout(() => s.destroy(), STORE_SILENCE_MS);
  });
  storePort = await freePort();
  await new Promise<void>((r) => silentStore.listen(storePort, '127.0.0.1', r));
}, 180_000);

afterAll(async () => {
  silentStore?.close();
  await cleanup();
});

/** Connects and resets on `port` every `everyMs` until stop(); counts the connections that were accepted. */
function resetter(port: number, everyMs: number): { stop(): number } {
  let accepted = 0;
  const timer = setInterval(() => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.once('connect', () => {
      accepted++;
      s.resetAndDestroy();
    });
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return accepted;
    },
  };
}

describe('connections reset while serve holds its port', () => {
  it('do not crash it: the start ends for its own reason', async () => {
    for (let round = 0; round < abuseScale(); round++) {
      const port = await freePort();
      const relay = new Proc(
        RELAY_BIN,
        [
          'serve',
          '--data-dir',
          tempDir('abuse-start-'),
          '--listen',
          `127.0.0.1:${port}`,
          '--udp-port',
          'off',
          '--stun-port',
          'off',
          '--store',
          `postgres://relay@127.0.0.1:${storePort}/relay`,
        ],
        cleanEnv({ TUNNEL_RELAY_STORE_PASSWORD: 'unused' }),
      );
      const r = resetter(port, 3);
      const code = await relay.exited;
      const accepted = r.stop();
      // The replay reached the held port (a refused connection would test nothing).
      expect(accepted).toBeGreaterThan(0);
      expect(relay.stderr).not.toContain('ECONNRESET');
      expect(relay.stderr).toContain(
        `BAD_CONFIG: store: cannot use postgres://relay@127.0.0.1:${storePort}/relay`,
      );
      expect(code).toBe(2);
    }
  }, 60_000);
});
