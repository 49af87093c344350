import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConnectionTable, type HeldSocket, type TrackedConnection } from './connection-table.js';

let port = 1_000;
function socketFrom(remoteAddress: string): HeldSocket & { destroyed: boolean } {
  return {
    remoteAddress,
    remotePort: port++,
    localAddress: '127.0.0.1',
    localPort: 8443,
    destroyed: false,
    destroy() {
      this.destroyed = true;
    },
  };
}

describe('ConnectionTable', () => {
  it('refuses a source at its pending cap; settled connections make room again', () => {
    const t = new ConnectionTable({ maxConnections: 100, maxPendingPerSource: 2 });
    const a = t.admit(socketFrom('10.0.0.1'), '10.0.0.1');
    const b = t.admit(socketFrom('10.0.0.1'), '10.0.0.1');
    expect(t.admit(socketFrom('10.0.0.1'), '10.0.0.1')).toEqual({
      kind: 'refused',
      reason: 'source_cap',
      source: '10.0.0.1',
    });
    expect(t.admit(socketFrom('10.0.0.2'), '10.0.0.2').kind).toBe('admitted');
    if (a.kind !== 'admitted' || b.kind !== 'admitted') throw new Error('not admitted');
    t.settle(a.connection);
    t.settle(a.connection);
    expect(t.admit(socketFrom('10.0.0.1'), '10.0.0.1').kind).toBe('admitted');
    t.remove(b.connection);
    expect(t.admit(socketFrom('10.0.0.1'), '10.0.0.1').kind).toBe('admitted');
    expect(t.admit(socketFrom('10.0.0.1'), '10.0.0.1').kind).toBe('refused');
    // Settled connections of the source (agents behind one NAT) are not limited by the pending cap.
    expect(t.size).toBe(4);
    expect(t.pendingCount).toBe(3);
  });

  it('at the total cap evicts the oldest pending connection, and refuses once all are settled', () => {
    const t = new ConnectionTable({ maxConnections: 3, maxPendingPerSource: null });
    const admitted = ['a', 'b', 'c'].map((s) => t.admit(socketFrom(s), s));
    const [first, second, third] = admitted.map((x) => (x.kind === 'admitted' ? x.connection : null));
    const next = t.admit(socketFrom('d'), 'd');
    expect(next.kind === 'admitted' && next.evicted).toBe(first);
    t.settle(second!);
    const after = t.admit(socketFrom('e'), 'e');
    expect(after.kind === 'admitted' && after.evicted).toBe(third);
    if (next.kind !== 'admitted' || after.kind !== 'admitted') throw new Error('not admitted');
    t.settle(next.connection);
    t.settle(after.connection);
    expect(t.admit(socketFrom('f'), 'f')).toEqual({ kind: 'refused', reason: 'total_cap', source: 'f' });
    expect(t.size).toBe(3);
  });

  it('finds a connection from another socket object with the same endpoints (the TLS socket)', () => {
    const t = new ConnectionTable({ maxConnections: 10, maxPendingPerSource: null });
    const raw = socketFrom('192.0.2.7');
    const r = t.admit(raw, '192.0.2.7');
    const overlay = { ...raw };
    expect(r.kind === 'admitted' && t.find(overlay)).toBe(r.kind === 'admitted' ? r.connection : null);
    if (r.kind === 'admitted') t.remove(r.connection);
    expect(t.find(overlay)).toBeUndefined();
    expect(t.find(raw)).toBeUndefined();
  });

  it('does not count a socket whose peer is already gone', () => {
    const t = new ConnectionTable({ maxConnections: 10, maxPendingPerSource: 1 });
    expect(t.admit({ destroyed: true, destroy() {} }, '10.0.0.1')).toEqual({ kind: 'gone' });
    expect(t.size).toBe(0);
  });

  it('property: counts never exceed the caps and always match what is held', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('admit' as const), source: fc.integer({ min: 0, max: 4 }) }),
      fc.record({ kind: fc.constantFrom('settle' as const, 'remove' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op),
        (max, per, ops) => {
          const t = new ConnectionTable({ maxConnections: max, maxPendingPerSource: per });
          const held = new Map<TrackedConnection, { source: string; pending: boolean }>();
          for (const o of ops) {
            if (o.kind === 'admit') {
              const source = `s${o.source}`;
              const r = t.admit(socketFrom(source), source);
              if (r.kind === 'admitted') {
                if (r.evicted) held.delete(r.evicted);
                held.set(r.connection, { source, pending: true });
              }
              continue;
            }
            const all = [...held.keys()];
            const c = all[o.pick % Math.max(1, all.length)];
            if (!c) continue;
            const found = t.find(c.socket);
            if (!found) throw new Error('held connection not found');
            if (o.kind === 'settle') {
              t.settle(found);
              held.get(c)!.pending = false;
            } else {
              t.remove(found);
              held.delete(c);
            }
          }
          expect(t.size).toBe(held.size);
          expect(t.size).toBeLessThanOrEqual(max);
          expect(t.pendingCount).toBe([...held.values()].filter((h) => h.pending).length);
          for (let s = 0; s <= 4; s++) {
            const pending = [...held.values()].filter((h) => h.pending && h.source === `s${s}`).length;
            expect(pending).toBeLessThanOrEqual(per);
          }
        },
      ),
    );
  });
});
