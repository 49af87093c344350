/**
 * TLS session ticket keys. A client that kept a ticket resumes its session on a new connection (no certificate
 * sent, signed or checked), which is most of a new connection's TLS cost. Node issues tickets with a random key
 * per process by default, so a ticket resumes only on the replica that issued it. With a mesh key (the secret
 * every replica of a fleet shares) every replica derives the same ticket keys for the current period instead, and
 * a ticket resumes on any replica behind the fleet's load balancer. The keys change every TICKET_KEY_PERIOD_MS
 * (tickets of the last period then take a full handshake), so a ticket key never lives longer than a period.
 */
import { hkdfSync } from 'node:crypto';
import type { Server as TlsServer } from 'node:tls';
import type { Clock, TimerHandle } from '../../../shared/clock.js';

/** How long one set of fleet ticket keys is used. */
export const TICKET_KEY_PERIOD_MS = 6 * 60 * 60 * 1000;
/** Node's ticket keys: 16 bytes name, 16 bytes AES key, 16 bytes HMAC key. */
export const TICKET_KEYS_BYTES = 48;

const SALT = 'tunnel-relay tls session tickets v1';

/** The period `wallMs` falls in. */
export function ticketPeriodOf(wallMs: number): number {
  return Math.floor(wallMs / TICKET_KEY_PERIOD_MS);
}

/** The fleet's ticket keys for one period, derived from the mesh key (HKDF-SHA256). */
export function fleetTicketKeys(meshKey: Buffer, period: number): Buffer {
  return Buffer.from(hkdfSync('sha256', meshKey, SALT, `period ${period}`, TICKET_KEYS_BYTES));
}

/**
 * Sets the fleet's ticket keys on `server` now and again at each period's start; returns the function that
 * stops the timer.
 */
export function rotateFleetTicketKeys(server: TlsServer, meshKey: Buffer, clock: Clock): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  const apply = (): void => {
    if (stopped) return;
    const now = clock.wallNow();
    const period = ticketPeriodOf(now);
    server.setTicketKeys(fleetTicketKeys(meshKey, period));
    const next = (period + 1) * TICKET_KEY_PERIOD_MS - now;
    timer = clock.setTimer(Math.max(1_000, next), apply);
  };
  apply();
  return () => {
    stopped = true;
    clock.clearTimer(timer);
  };
}
