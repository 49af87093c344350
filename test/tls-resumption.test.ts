/**
 * A real `tunnel-relay serve` resumes TLS sessions: a client that kept the ticket of its last connection skips the
 * full handshake on the next one (relay/ops/tls/ticket-keys.ts), and the resumed connection serves requests.
 */
import { once } from 'node:events';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { serveForFile } from './helpers/served-relay.js';

const relay = serveForFile({ prefix: 'tls-resume' });

/** GET /healthz on a new TLS connection offering `session`; whether it resumed, its ticket and the status line. */
async function healthz(session?: Buffer): Promise<{ reused: boolean; ticket?: Buffer; status: string }> {
  const u = new URL(relay.ready.url);
  const c = tls.connect({
    host: u.hostname,
    port: Number(u.port),
    ca: relay.caPem,
    servername: 'localhost',
    session,
  });
  let ticket: Buffer | undefined;
  c.on('session', (t: Buffer) => {
    ticket = t;
  });
  await once(c, 'secureConnect');
  const reused = c.isSessionReused();
  let answer = '';
  c.on('data', (d: Buffer) => {
    answer += d.toString('latin1');
  });
  c.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  await Promise.race([
    once(c, 'end'),
    new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 10 s')), 10_000).unref()),
  ]);
  c.destroy();
  return { reused, ticket, status: answer.split('\r\n')[0] ?? '' };
}

describe('TLS session resumption on the relay', () => {
  it('resumes a session from the ticket of the last connection, and serves on it', async () => {
    const first = await healthz();
    expect(first.reused).toBe(false);
    expect(first.status).toBe('HTTP/1.1 200 OK');
    expect(first.ticket).toBeDefined();
    for (let i = 0; i < 3; i++) {
      const again = await healthz(first.ticket);
      expect(again.reused).toBe(true);
      expect(again.status).toBe('HTTP/1.1 200 OK');
    }
  });
});
