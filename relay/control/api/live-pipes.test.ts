import { EventEmitter } from 'node:events';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { isTunnelError, type TunnelError } from '../../../shared/errors.js';
import { SqliteStore } from '../store/sqlite.js';
import { type Closable, EXPIRY_CHECK_MAX_MS, LivePipes, REMEMBER_ENDED_MS } from './live-pipes.js';

const audit = { at: 0, actor: 'test', action: 'token.revoke', target: '', source: '', detail: {} };

/** A client side that records being destroyed and emits 'close' like a socket. */
class Side extends EventEmitter implements Closable {
  destroyed = false;
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

/** A fake clock whose wall clock can jump while the monotonic one does not. */
class SteppingClock extends FakeClock {
  stepMs = 0;
  override wallNow(): number {
    return super.wallNow() + this.stepMs;
  }
}

let store: SqliteStore;
let pipes: LivePipes;
let clock: FakeClock;

async function setup(maxPipes?: number): Promise<void> {
  clock = new FakeClock();
  store = new SqliteStore(':memory:');
  for (const id of ['k1', 'k2']) {
    await store.createAccessKey(
      { id, role: 'viewer', description: '', createdAt: 0, expiresAt: null, revokedAt: null, minted: null },
      `hash-${id}`,
      { ...audit, action: 'token.create' },
    );
  }
  pipes = new LivePipes({
    ctx: { clock, log: pino({ level: 'silent' }) },
    credentials: store,
    ...(maxPipes ? { maxPipes } : {}),
  });
}

afterEach(async () => {
  pipes.close();
  await store.close();
});

const never = { expiresAt: null };

describe('LivePipes', () => {
  it("revoking a key in the store ends that key's pipes at once, and no other key's", async () => {
    await setup();
    const mine = [new Side(), new Side(), new Side()];
    const other = new Side();
    for (const s of mine) pipes.hold({ id: 'k1', ...never }, s);
    pipes.hold({ id: 'k2', ...never }, other);
    expect(pipes.size).toBe(4);
    expect(await store.revokeAccessKey('k1', 1, audit)).toBe('revoked');
    expect(mine.map((s) => s.destroyed)).toEqual([true, true, true]);
    expect(other.destroyed).toBe(false);
    expect(pipes.size).toBe(1);
    expect(pipes.stats.ended.revoked).toBe(3);
  });

  it('a pipe that closes on its own leaves the registry; an already closed side is not kept', async () => {
    await setup();
    const s = new Side();
    pipes.hold({ id: 'k1', ...never }, s);
    s.destroy();
    expect(pipes.size).toBe(0);
    const gone = new Side();
    gone.destroyed = true;
    pipes.hold({ id: 'k1', ...never }, gone);
    expect(pipes.size).toBe(0);
    expect(pipes.endKey('k1', 'expired')).toBe(0);
  });

  it('refuses a key revoked before its pipe registered (the check raced the revocation), for a minute', async () => {
    await setup();
    await store.revokeAccessKey('k1', 1, audit);
    const refused = (): unknown => {
      try {
        pipes.add({ id: 'k1', ...never }, () => {});
        return null;
      } catch (err) {
        return err;
      }
    };
    expect(isTunnelError(refused(), 'UNAUTHENTICATED')).toBe(true);
    clock.advance(REMEMBER_ENDED_MS - 1);
    expect(isTunnelError(refused(), 'UNAUTHENTICATED')).toBe(true);
    clock.advance(1);
    expect(refused()).toBeNull();
  });

  it('ends the pipes of an expiring key at its expiry, not before', async () => {
    await setup();
    const at = clock.wallNow() + 2_500;
    const early = new Side();
    const late = new Side();
    pipes.hold({ id: 'k1', expiresAt: at }, early);
    pipes.hold({ id: 'k2', expiresAt: at + 10_000 }, late);
    clock.advance(2_499);
    expect(early.destroyed).toBe(false);
    clock.advance(1);
    expect(early.destroyed).toBe(true);
    expect(late.destroyed).toBe(false);
    clock.advance(10_000);
    expect(late.destroyed).toBe(true);
    expect(pipes.stats.ended.expired).toBe(2);
    expect(clock.pendingTimers).toBe(0);
  });

  it('checks expiry at least every second, so a wall-clock step forward is noticed within one', async () => {
    await setup();
    const stepping = new SteppingClock();
    pipes.close();
    pipes = new LivePipes({ ctx: { clock: stepping, log: pino({ level: 'silent' }) }, credentials: store });
    const s = new Side();
    pipes.hold({ id: 'k1', expiresAt: stepping.wallNow() + 3_600_000 }, s);
    stepping.advance(EXPIRY_CHECK_MAX_MS);
    expect(s.destroyed).toBe(false);
    stepping.stepMs = 3_600_000;
    stepping.advance(EXPIRY_CHECK_MAX_MS);
    expect(s.destroyed).toBe(true);
  });

  it('refuses a key that has already expired, and refuses beyond the cap with LIMIT_EXCEEDED', async () => {
    await setup(2);
    let err: unknown;
    try {
      pipes.add({ id: 'k1', expiresAt: clock.wallNow() }, () => {});
    } catch (e) {
      err = e;
    }
    expect(isTunnelError(err, 'UNAUTHENTICATED')).toBe(true);
    pipes.add({ id: 'k1', ...never }, () => {});
    const release = pipes.add({ id: 'k2', ...never }, () => {});
    expect(() => pipes.add({ id: 'k2', ...never }, () => {})).toThrow(/already holds 2/);
    expect(pipes.stats.refusedFull).toBe(1);
    release();
    release();
    expect(pipes.size).toBe(1);
    expect(() => pipes.add({ id: 'k2', ...never }, () => {})).not.toThrow();
  });

  it('the end reason names the key and why; close() stops listening to the store', async () => {
    await setup();
    const reasons: TunnelError[] = [];
    pipes.add({ id: 'k1', ...never }, (r) => reasons.push(r));
    pipes.endKey('k1', 'expired');
    expect(reasons.map((r) => [r.code, r.message])).toEqual([['UNAUTHENTICATED', 'access key k1 expired']]);
    const s = new Side();
    pipes.hold({ id: 'k2', ...never }, s);
    pipes.close();
    await store.revokeAccessKey('k2', 1, audit);
    expect(s.destroyed).toBe(false);
  });
});
