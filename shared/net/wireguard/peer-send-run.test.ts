/**
 * A peer inside a send run (shared/net/buffers/send-run.ts): packets granted room are held and leave at the run's
 * end, sealed together, in order, with consecutive counters; anything else keeps the order by sending what is held
 * first. Two devices on the in-memory link of test/helpers/wireguard-link.ts.
 */
import { describe, expect, it } from 'vitest';
import { A_ADDR, B_ADDR, Link, udpFrom } from '../../../test/helpers/wireguard-link.js';
import { allocPacket } from '../buffers/packet-room.js';
import { sendRun } from '../buffers/send-run.js';
import { MSG_TRANSPORT } from './messages.js';
import { TRANSPORT_HEADROOM, TRANSPORT_TAILROOM } from './transport.js';

/** A packet from A to B granted the room the transport seals in. */
function granted(payload: string): Buffer {
  const bytes = udpFrom(A_ADDR, B_ADDR, payload);
  const p = allocPacket(bytes.length, TRANSPORT_HEADROOM, TRANSPORT_TAILROOM);
  p.set(bytes);
  return p;
}

/** A link whose session is up (one packet went each way), the queue empty. */
function upLink(): Link {
  const l = new Link();
  l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'up'));
  l.pump();
  l.gotB.length = 0;
  return l;
}

const counters = (l: Link) =>
  l.queue
    .filter((w) => w.from === 'a' && w.data[0] === MSG_TRANSPORT)
    .map((w) => Number(w.data.readBigUInt64LE(8)));

describe('Peer inside a send run', () => {
  it('holds packets granted room until the run ends, then sends them in order with consecutive counters', () => {
    const l = upLink();
    const first = l.peerOfA.keypairs.current?.sendCounter ?? -1;
    const runsBefore = sendRun.stats.runs;
    sendRun.within(() => {
      for (const s of ['one', 'two', 'three']) expect(l.peerOfA.send(granted(s))).toBe(true);
      expect(l.queue).toHaveLength(0); // held
    });
    expect(sendRun.stats.runs).toBe(runsBefore + 1);
    expect(counters(l)).toEqual([first, first + 1, first + 2]);
    l.pump();
    expect(l.gotB.map((p) => p.subarray(28).toString())).toEqual(['one', 'two', 'three']);
    l.close();
  });

  it('sends at once outside a run, and a packet without room inside a run after what the run holds', () => {
    const l = upLink();
    l.peerOfA.send(granted('alone'));
    expect(l.queue).toHaveLength(1);
    l.pump();
    sendRun.within(() => {
      l.peerOfA.send(granted('held'));
      l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'plain')); // no room: it may not be held
      expect(l.queue).toHaveLength(2);
      l.peerOfA.send(granted('after'));
      expect(l.queue).toHaveLength(2);
    });
    l.pump();
    expect(l.gotB.map((p) => p.subarray(28).toString())).toEqual(['alone', 'held', 'plain', 'after']);
    l.close();
  });

  it('sends a full run of 64 at once inside the run; closing drops what is held, counted as closed', () => {
    const l = upLink();
    sendRun.within(() => {
      for (let i = 0; i < 65; i++) l.peerOfA.send(granted(`p${i}`));
      expect(l.queue).toHaveLength(64);
      l.peerOfA.close();
    });
    expect(l.queue).toHaveLength(64);
    expect(l.peerOfA.drops.closed).toBe(1);
    l.close();
  });

  it('stages what it holds when the session cannot send at the run end, and sends it after the handshake', () => {
    const l = new Link(); // no session yet
    sendRun.within(() => {
      l.peerOfA.send(udpFrom(A_ADDR, B_ADDR, 'first')); // staged: a handshake starts
      l.peerOfA.send(granted('second')); // staged behind it, not held
    });
    expect(l.peerOfA.stagedCount).toBe(2);
    l.pump();
    expect(l.gotB.map((p) => p.subarray(28).toString())).toEqual(['first', 'second']);
    l.close();
  });
});
