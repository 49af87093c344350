import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMERS } from './constants.js';
import { REPLAY_WINDOW_SIZE, ReplayFilter } from './replay.js';

// Ported from wireguard-go replay/replay_test.go (itself from the Linux kernel's selftest).
const REJECT = DEFAULT_TIMERS.rejectAfterMessages;
const W = BigInt(REPLAY_WINDOW_SIZE);
const T_LIM = W + 1n;

describe('ReplayFilter (wireguard-go replay_test.go cases)', () => {
  it('window size is 8128', () => {
    expect(REPLAY_WINDOW_SIZE).toBe(127 * 64);
  });

  it('the 34 numbered cases', () => {
    const f = new ReplayFilter();
    const cases: [bigint, boolean][] = [
      [0n, true],
      [1n, true],
      [1n, false],
      [9n, true],
      [8n, true],
      [7n, true],
      [7n, false],
      [T_LIM, true],
      [T_LIM - 1n, true],
      [T_LIM - 1n, false],
      [T_LIM - 2n, true],
      [2n, true],
      [2n, false],
      [T_LIM + 16n, true],
      [3n, false],
      [T_LIM + 16n, false],
      [T_LIM * 4n, true],
      [T_LIM * 4n - (T_LIM - 1n), true],
      [10n, false],
      [T_LIM * 4n - T_LIM, false],
      [T_LIM * 4n - (T_LIM + 1n), false],
      [T_LIM * 4n - (T_LIM - 2n), true],
      [T_LIM * 4n + 1n - T_LIM, false],
      [0n, false],
      [REJECT, false],
      [REJECT - 1n, true],
      [REJECT, false],
      [REJECT - 1n, false],
      [REJECT - 2n, true],
      [REJECT + 1n, false],
      [REJECT + 2n, false],
      [REJECT - 2n, false],
      [REJECT - 3n, true],
      [0n, false],
    ];
    cases.forEach(([c, ok], i) => {
      expect({ n: i + 1, ok: f.validate(c, REJECT) }).toEqual({ n: i + 1, ok });
    });
  });

  const bulk = (name: string, run: (T: (c: bigint, ok: boolean) => void) => void) =>
    it(name, () => {
      const f = new ReplayFilter();
      let failures = 0;
      run((c, ok) => {
        if (f.validate(c, REJECT) !== ok) failures++;
      });
      expect(failures).toBe(0);
    });

  bulk('bulk 1: 1..W ascending then 0 once', (T) => {
    for (let i = 1n; i <= W; i++) T(i, true);
    T(0n, true);
    T(0n, false);
  });
  bulk('bulk 2: 2..W+1 ascending, 1 accepted, 0 too old', (T) => {
    for (let i = 2n; i <= W + 1n; i++) T(i, true);
    T(1n, true);
    T(0n, false);
  });
  bulk('bulk 3: W+1..1 descending', (T) => {
    for (let i = W + 1n; i > 0n; i--) T(i, true);
  });
  bulk('bulk 4: W+2..2 descending, 0 too old', (T) => {
    for (let i = W + 2n; i > 1n; i--) T(i, true);
    T(0n, false);
  });
  bulk('bulk 5: W..1 descending, W+1, then 0 too old', (T) => {
    for (let i = W; i > 0n; i--) T(i, true);
    T(W + 1n, true);
    T(0n, false);
  });
  bulk('bulk 6: W..1 descending, 0, then W+1', (T) => {
    for (let i = W; i > 0n; i--) T(i, true);
    T(0n, true);
    T(W + 1n, true);
  });

  it('the number fast path agrees with the bigint path (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.integer({ min: 0, max: 20_000 }),
            fc.integer({ min: 0, max: 2 ** 40 }),
            fc.constant(2 ** 53 - 1),
          ),
          { maxLength: 300 },
        ),
        (counters) => {
          const viaNumber = new ReplayFilter();
          const viaBig = new ReplayFilter();
          for (const c of counters) {
            expect(viaNumber.validate(c, REJECT)).toBe(viaBig.validate(BigInt(c), REJECT));
          }
        },
      ),
    );
  });

  it('switches to bigint mode past 2^53 and stays exact', () => {
    const f = new ReplayFilter();
    expect(f.validate(5, REJECT)).toBe(true);
    expect(f.validate(2n ** 60n, REJECT)).toBe(true);
    expect(f.validate(2n ** 60n, REJECT)).toBe(false);
    expect(f.validate(2n ** 60n - 1n, REJECT)).toBe(true);
    expect(f.validate(5, REJECT)).toBe(false); // far behind now
  });

  it('reset forgets everything', () => {
    const f = new ReplayFilter();
    expect(f.validate(5n, REJECT)).toBe(true);
    f.reset();
    expect(f.validate(5n, REJECT)).toBe(true);
  });
});
