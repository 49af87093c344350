import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../test/helpers/tinyproxy.js';
import { holdListenPort } from './port-hold.js';

describe('holdListenPort', () => {
  it('closes connections made while it holds the port, and a client reset does not throw', async () => {
    const port = await freePort();
    const held = await holdListenPort('127.0.0.1', port);
    try {
      // A health checker that connects and resets: the held socket must not emit an unhandled 'error'.
      for (let i = 0; i < 20; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        await new Promise<void>((r) => s.once('connect', () => r()));
        s.resetAndDestroy();
      }
      // A client that waits sees the connection closed by the holder.
      const closed = await new Promise<boolean>((resolve) => {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        s.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 2_000);
      });
      expect(closed).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await held.release();
    }
  });
});
