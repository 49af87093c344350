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

/**
 * ARQ tuning of the relay path. It runs over the relay's TCP connections, which queue instead of dropping,
 * so the loss-based window alone would fill every buffer on the way: the in-flight cap (inflight-cap.ts)
 * keeps about queueTargetMs of data queued, which bounds how long a new stream's bytes wait behind a bulk
 * stream. 1 ms: on loopback with a CPU-bound relay and agent, 4 ms gave small requests next to a bulk stream
 * p50 7.7-8.5 ms and 1 ms 4.4-6.2 ms, at the same bulk rate (docs/BENCHMARKS.md); the floor of 4 segments and
 * the 2 x minRtt term keep a long path filled. Every datagram with data is acknowledged at once (ackEvery 1), so that RTT samples do not include
 * an ACK delay; at ~64 KB per segment that is one small ACK per 64 KB.
 */
export const RELAYED_ARQ_TUNING = { ackEvery: 1, queueTargetMs: 1 } as const;
