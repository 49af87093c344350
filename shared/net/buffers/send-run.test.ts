import { describe, expect, it } from 'vitest';
import { SendRun } from './send-run.js';

describe('SendRun', () => {
  it('defers only while a run is open, flushes each sender once at the outermost end', () => {
    const run = new SendRun();
    const flushed: string[] = [];
    const a = { flushSendRun: () => flushed.push('a') };
    const b = { flushSendRun: () => flushed.push('b') };
    expect(run.defer(a)).toBe(false);
    run.within(() => {
      expect(run.defer(a)).toBe(true);
      run.within(() => {
        expect(run.defer(b)).toBe(true);
        expect(run.defer(a)).toBe(true);
      });
      expect(flushed).toEqual([]); // the inner run's end is not the run's end
    });
    expect(flushed).toEqual(['a', 'b']);
    expect(run.stats).toEqual({ runs: 1, flushes: 2 });
    expect(run.open).toBe(false);
  });

  it('a flush that throws does not keep the others from running; its error is thrown after them', () => {
    const run = new SendRun();
    const flushed: string[] = [];
    const bad = {
      flushSendRun: () => {
        throw new Error('boom');
      },
    };
    expect(() =>
      run.within(() => {
        run.defer(bad);
        run.defer({ flushSendRun: () => flushed.push('ok') });
      }),
    ).toThrow('boom');
    expect(flushed).toEqual(['ok']);
    expect(run.defer(bad)).toBe(false);
  });
});
