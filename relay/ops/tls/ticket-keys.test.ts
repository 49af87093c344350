import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { makeSelfSignedCert } from '../../../test/helpers/test-cert.js';
import {
  fleetTicketKeys,
  rotateFleetTicketKeys,
  TICKET_KEY_PERIOD_MS,
  TICKET_KEYS_BYTES,
  ticketPeriodOf,
} from './ticket-keys.js';

const cert = makeSelfSignedCert('localhost');
const servers: tls.Server[] = [];

/** A real TLS server that answers every connection with one line and closes it. */
async function server(meshKey: Buffer | null, clock: FakeClock): Promise<{ port: number; stop(): void }> {
  const s = tls.createServer({ key: cert.key, cert: cert.cert }, (c) => {
    c.on('error', () => {});
    c.write('hello\n');
  });
  servers.push(s);
  const stop = meshKey ? rotateFleetTicketKeys(s, meshKey, clock) : () => {};
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  return { port: (s.address() as AddressInfo).port, stop };
}

/**
 * One connection to `port` offering `session`; resolves with whether it resumed and, for a full handshake, the
 * ticket it got (a resumed session may not be sent a new one).
 */
async function connect(port: number, session?: Buffer): Promise<{ reused: boolean; ticket: Buffer }> {
  const c = tls.connect({ host: '127.0.0.1', port, ca: cert.cert, servername: 'localhost', session });
  c.on('error', () => {});
  const ticket = new Promise<Buffer>((resolve, reject) => {
    c.once('session', resolve);
    setTimeout(() => reject(new Error('no session ticket within 5 s')), 5_000).unref();
  });
  c.resume();
  await once(c, 'secureConnect');
  const reused = c.isSessionReused();
  try {
    return { reused, ticket: reused ? Buffer.alloc(0) : await ticket };
  } finally {
    ticket.catch(() => {});
    c.destroy();
  }
}

afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe('fleet TLS ticket keys', () => {
  it('are 48 bytes, the same for the same key and period, different otherwise', () => {
    const key = Buffer.alloc(32, 7);
    const k = fleetTicketKeys(key, 10);
    expect(k.length).toBe(TICKET_KEYS_BYTES);
    expect(fleetTicketKeys(Buffer.alloc(32, 7), 10).equals(k)).toBe(true);
    expect(fleetTicketKeys(key, 11).equals(k)).toBe(false);
    expect(fleetTicketKeys(Buffer.alloc(32, 8), 10).equals(k)).toBe(false);
    expect(ticketPeriodOf(TICKET_KEY_PERIOD_MS * 3 + 5)).toBe(3);
  });

  it('let a ticket one replica issued resume on another replica of the same fleet', async () => {
    const clock = new FakeClock();
    const a = await server(Buffer.alloc(32, 1), clock);
    const b = await server(Buffer.alloc(32, 1), clock);
    const first = await connect(a.port);
    expect(first.reused).toBe(false);
    expect((await connect(b.port, first.ticket)).reused).toBe(true);
    a.stop();
    b.stop();
  });

  it('do not resume across fleets, nor without shared keys', async () => {
    const clock = new FakeClock();
    const a = await server(Buffer.alloc(32, 1), clock);
    const other = await server(Buffer.alloc(32, 2), clock);
    const plain = await server(null, clock);
    const first = await connect(a.port);
    expect((await connect(other.port, first.ticket)).reused).toBe(false);
    expect((await connect(plain.port, first.ticket)).reused).toBe(false);
    // A plain server still resumes its own tickets (Node's per-process keys).
    const own = await connect(plain.port);
    expect((await connect(plain.port, own.ticket)).reused).toBe(true);
    a.stop();
    other.stop();
  });

  it('change at the next period: a ticket of the last period takes a full handshake', async () => {
    const clock = new FakeClock();
    const a = await server(Buffer.alloc(32, 1), clock);
    const first = await connect(a.port);
    expect((await connect(a.port, first.ticket)).reused).toBe(true);
    clock.advance(TICKET_KEY_PERIOD_MS);
    expect((await connect(a.port, first.ticket)).reused).toBe(false);
    a.stop();
  });
});
