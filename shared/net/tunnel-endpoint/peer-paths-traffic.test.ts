import { describe, expect, it } from 'vitest';
import { receiveRun } from '../arq/receive-run.js';
import { sendRun } from '../buffers/send-run.js';
import { PeerPaths } from './peer-paths.js';

function tracked(): { paths: PeerPaths; notes: () => number } {
  const paths = new PeerPaths({
    publicKey: Buffer.alloc(32, 1),
    address: 0x64400002,
    onPathChange: () => {},
    onAuthenticated: () => {},
  });
  let notes = 0;
  paths.track({
    active: true,
    noteTraffic: () => {
      notes++;
    },
  });
  return { paths, notes: () => notes };
}

describe('PeerPaths.noteTraffic', () => {
  it('tells the tracker of every packet outside a run, and of the first packet only inside a send or receive run', () => {
    const t = tracked();
    t.paths.noteTraffic();
    t.paths.noteTraffic();
    expect(t.notes()).toBe(2);
    sendRun.within(() => {
      for (let i = 0; i < 40; i++) t.paths.noteTraffic();
    });
    expect(t.notes()).toBe(3);
    receiveRun.within(() => {
      for (let i = 0; i < 40; i++) t.paths.noteTraffic();
    });
    expect(t.notes()).toBe(4);
    sendRun.within(() => t.paths.noteTraffic()); // a new run is told again
    t.paths.noteTraffic();
    expect(t.notes()).toBe(6);
  });
});
