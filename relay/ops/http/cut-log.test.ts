import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { CUT_LOG_MAX_SOURCES, CutLog } from './cut-log.js';

function recorder() {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string) =>
    lines.push({ level, obj, msg });
  return { lines, log: { warn: at('warn') } };
}

describe('CutLog', () => {
  it('logs the first cut at once, then one summary per window while cuts go on', () => {
    const clock = new FakeClock();
    const { lines, log } = recorder();
    const cuts = new CutLog({ log, clock, windowMs: 60_000 });
    cuts.record('header_timeout', '192.0.2.1');
    expect(lines).toEqual([
      {
        level: 'warn',
        obj: { reason: 'header_timeout', source: '192.0.2.1' },
        msg: 'HTTP connection cut: header_timeout',
      },
    ]);
    for (let i = 0; i < 5_000; i++) cuts.record(i % 2 ? 'source_cap' : 'body_timeout', `10.0.${i % 7}.1`);
    expect(lines).toHaveLength(1);
    clock.advance(60_000);
    expect(lines).toHaveLength(2);
    expect(lines[1]!.level).toBe('warn');
    expect(lines[1]!.obj).toMatchObject({
      cut: { body_timeout: 2_500, source_cap: 2_500 },
      sources: 7,
      windowSeconds: 60,
    });
    expect((lines[1]!.obj.topSources as unknown[]).length).toBe(5);
    cuts.record('source_cap', '10.0.0.1');
    clock.advance(60_000);
    expect(lines).toHaveLength(3);
    // A quiet window ends the series: the next cut is logged at once again.
    clock.advance(60_000);
    expect(lines).toHaveLength(3);
    cuts.record('total_cap', '10.0.0.9');
    expect(lines[3]).toMatchObject({ level: 'warn', obj: { reason: 'total_cap', source: '10.0.0.9' } });
    cuts.close();
  });

  it('counts at most CUT_LOG_MAX_SOURCES distinct sources per window, the rest as other', () => {
    const clock = new FakeClock();
    const { lines, log } = recorder();
    const cuts = new CutLog({ log, clock, windowMs: 1_000 });
    cuts.record('source_cap', 'first');
    for (let i = 0; i < CUT_LOG_MAX_SOURCES + 500; i++) cuts.record('source_cap', `s${i}`);
    clock.advance(1_000);
    expect(lines[1]!.obj.sources).toBe(CUT_LOG_MAX_SOURCES + 1);
    expect(lines[1]!.obj.topSources).toContainEqual({ source: 'other', count: 500 });
    cuts.close();
  });
});
