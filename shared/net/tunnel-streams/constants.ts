/**
 * Where the hub -> agent streams ride inside the tunnel: one ArqSession (+ mux) per peer pair, carried
 * in IPv4/UDP datagrams between the two tunnel addresses, from and to this fixed inner UDP port on both
 * sides.
 *
 *   inner packet = | IPv4 header (20) | UDP header (8) | ARQ datagram (segments, <= ARQ MTU) |
 *   UDP src port = dst port = STREAMS_PORT
 */
/** Inner UDP port of the stream session, on the hub and on the agent. */
export const STREAMS_PORT = 4789;

import type { AckPolicy } from '../arq/pending-acks.js';

/** The kind of path a stream session's datagrams take now (the tunnel endpoint's PathKind). */
export type StreamPathKind = 'relayed' | 'direct';

/** How a stream session sends on one kind of path: its ACK policy and its in-flight cap's queue target. */
export interface StreamPathTuning {
  ack: AckPolicy;
  /** ms of data the in-flight cap (arq/inflight-cap.ts) keeps queued in front of the path. */
  queueTargetMs: number;
}

/**
 * How a stream session sends, by the path its datagrams take now (the session follows a path switch at once:
 * StreamLink.setPath).
 *
 * ACKs:
 * - relayed: every full segment at once. A segment is up to ~64 KB, so that is one small ACK per 64 KB. A short
 *   one (a request, a reply, an open, a FIN) waits up to 2 ms for a datagram to ride on (holdShort): each datagram
 *   through the relay is a TLS record and a wake-up of the other process, and a new connection's exchange (open,
 *   reply, answer, ends) sent five ACK datagrams of its own where a reply now carries some.
 * - direct: a segment is at most the path MTU (1,420 bytes at a 1,500-byte MTU), and the cost of a datagram is
 *   per datagram, not per byte (one sealed UDP send each): every 8th data segment, or 1 ms after the first
 *   one pending, whichever comes first; at once on a gap, a duplicate or a small receive window, and when the
 *   sender's window is too small to wait (pending-acks.ts). The UDP path drops rather than queues, so a lost
 *   ACK costs only its share of a later one (ACKs are cumulative). Every 8th against every 4th, same bench
 *   minute (docs/BENCHMARKS.md): relay + agent 19.5-21.3 against 22.1-23.4 CPU s per GiB; every datagram:
 *   30-33. A short segment's ACK waits too, so a reply carries it: in an exchange of 100-byte messages relay
 *   + agent spent 145 us of CPU per round trip against 195 us acknowledging short segments at once.
 * Each ACK carries the time it was held, so RTT samples and the timers built on them leave the delay out.
 *
 * Queue target: the in-flight cap keeps about rate x (2 x minRtt + queueTargetMs) unacknowledged, which bounds
 * how long a new stream's bytes wait behind a bulk stream. On a long path the 2 x minRtt term dominates; on a
 * short one (a LAN, one host) the target sets the queue, and that queue is mostly work waiting in the two
 * processes' event loops and socket buffers.
 * - relayed: 1 ms. The relay's TCP connections queue instead of dropping; with CPU-bound relay and agent on
 *   loopback, 4 ms gave small requests next to a bulk stream p50 7.7-8.5 ms and 1 ms 4.4-6.2 ms, at the same
 *   bulk rate. The floor of 4 segments (4 x 64 KB) and the 2 x minRtt term keep a long path filled.
 * - direct: 0.5 ms. A bulk stream here costs about twice the CPU per byte (1,420-byte datagrams), so at 1 ms
 *   it kept relay and agent busy all the time and a small request next to it waited behind that work. On
 *   tunnel-bench's namespace site (one veth, two cores), round trips next to a bulk stream had a p99 of
 *   11.6-15.0 ms at 1 ms against the relayed path's 7.7-9.8 ms, and 6.7-8.8 ms at 0.5 ms against 8.1-10.1 ms;
 *   the bulk rate is the same within the noise. At 0.4 ms it fell by a sixth and at 0.3 ms by a third: too
 *   few datagrams in flight to fill a GSO run.
 */
export const STREAM_PATH_TUNING: Readonly<Record<StreamPathKind, StreamPathTuning>> = {
  relayed: { ack: { ackEvery: 1, ackDelayMs: 2, holdShort: true }, queueTargetMs: 1 },
  direct: { ack: { ackEvery: 8, ackDelayMs: 1 }, queueTargetMs: 0.5 },
};

/** The path a stream session's datagrams take: its kind, and the largest inner packet it carries. */
export interface StreamPath {
  kind: StreamPathKind;
  /** Largest inner IP packet towards the peer. */
  mtu: number;
}
