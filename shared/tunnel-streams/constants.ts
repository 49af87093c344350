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

/**
 * ARQ tuning of a stream session, on both paths. The relay path runs over the relay's TCP connections, which
 * queue instead of dropping, so the loss-based window alone would fill every buffer on the way: the in-flight
 * cap (inflight-cap.ts) keeps about queueTargetMs of data queued, which bounds how long a new stream's bytes
 * wait behind a bulk stream. 1 ms: on loopback with a CPU-bound relay and agent, 4 ms gave small requests next
 * to a bulk stream p50 7.7-8.5 ms and 1 ms 4.4-6.2 ms, at the same bulk rate (docs/BENCHMARKS.md); the floor of
 * 4 segments and the 2 x minRtt term keep a long path filled.
 */
export const STREAM_ARQ_TUNING = { queueTargetMs: 1 } as const;

/** The kind of path a stream session's datagrams take now (the tunnel endpoint's PathKind). */
export type StreamPathKind = 'relayed' | 'direct';

/**
 * How a stream session acknowledges, by the path its datagrams take now (the session follows a path switch at
 * once: StreamLink.setPath).
 * - relayed: every datagram at once. A segment is up to ~64 KB, so that is one small ACK per 64 KB.
 * - direct: a segment is at most the path MTU (1,420 bytes at a 1,500-byte MTU), and the cost of a datagram is
 *   per datagram, not per byte (one sealed UDP send each): every 8th data segment, or 1 ms after the first
 *   one pending, whichever comes first; at once on a gap, a duplicate, a short segment (the sender has no more)
 *   or a small receive window, and when the sender's window is too small to wait (pending-acks.ts). The UDP
 *   path drops rather than queues, so a lost ACK costs only its share of a later one (ACKs are cumulative).
 *   Every 8th against every 4th, same bench minute (docs/BENCHMARKS.md): relay + agent 19.5-21.3 against
 *   22.1-23.4 CPU s per GiB; every datagram: 30-33.
 * Each ACK carries the time it was held, so RTT samples and the timers built on them leave the delay out.
 */
export const STREAM_ACK_POLICIES: Readonly<Record<StreamPathKind, AckPolicy>> = {
  relayed: { ackEvery: 1, ackDelayMs: 10 },
  direct: { ackEvery: 8, ackDelayMs: 1 },
};

/** The path a stream session's datagrams take: its kind, and the largest inner packet it carries. */
export interface StreamPath {
  kind: StreamPathKind;
  /** Largest inner IP packet towards the peer. */
  mtu: number;
}
