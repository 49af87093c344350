/**
 * The relay cuts a TLS handshake that does not finish within TLS_HANDSHAKE_TIMEOUT_MS, on a real socket:
 * a client that sends the header of a long TLS record (or garbage that looks like one) and then nothing
 * must not hold the connection for Node's default 120 s. A well-behaved client still connects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRelayConfig } from '../relay/ops/config/config.js';
import { type RunningRelay, startRelay, TLS_HANDSHAKE_TIMEOUT_MS } from '../relay/start/server.js';
import { LogCapture } from './helpers/test-relay.js';

let dir: string;
let relay: RunningRelay;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'relay-tls-hs-'));
  relay = await startRelay(
    resolveRelayConfig({ flags: { dataDir: dir, listen: '127.0.0.1:0', stunPort: 'off', udpPort: 'off' } }),
    {
      logStream: new LogCapture(),
    },
  );
});

afterAll(async () => {
  await relay?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('relay TLS handshake timeout', () => {
  it('closes a connection stuck in the TLS handshake after the timeout, not after 120 s', async () => {
    const port = Number(new URL(relay.url).port);
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    const t0 = performance.now();
    // A TLS handshake record header announcing 16,384 bytes, then silence.
    s.write(Buffer.from([0x16, 0x03, 0x01, 0x40, 0x00]));
    const closedAfter = await new Promise<number>((resolve) => {
      const guard = setTimeout(() => {
        s.destroy();
        resolve(Number.POSITIVE_INFINITY);
      }, TLS_HANDSHAKE_TIMEOUT_MS + 5_000);
      s.once('close', () => {
        clearTimeout(guard);
        resolve(performance.now() - t0);
      });
    });
    expect(closedAfter).toBeGreaterThanOrEqual(TLS_HANDSHAKE_TIMEOUT_MS - 500);
    expect(closedAfter).toBeLessThan(TLS_HANDSHAKE_TIMEOUT_MS + 5_000);
    // The relay still completes a normal client's handshake.
    const ok = tls.connect({ host: '127.0.0.1', port, ca: relay.caPem, servername: 'localhost' });
    await new Promise<void>((resolve, reject) => {
      ok.once('secureConnect', () => resolve());
      ok.once('error', reject);
    });
    ok.destroy();
  }, 30_000);
});
