/**
 * The Node (V8) flags the `tunnel-relay` and `tunnel-client` processes run with. They must be on the `node`
 * command line (V8 reads them when it sizes the heap; `v8.setFlagsFromString` at start-up is too late, and
 * Node refuses this one in NODE_OPTIONS), so they are written where a process is started:
 *   - the binaries' first line: `#!/usr/bin/env -S node <flags>` (relay/cli/main.ts, tunnel-client/cli/main.ts),
 *   - deploy/Dockerfile's ENTRYPOINT, the agent's start command in deploy/kubernetes/agent.yaml, `npm start`,
 *   - the benchmarks, the demo and the test harness, which start the binaries with `process.execPath`.
 * node-flags.test.ts checks that every one of those places carries exactly these flags.
 *
 * `--initial-old-space-size=64` (MiB): under a bulk stream both processes keep a small old generation
 * (13-20 MB live) and a young generation that has grown to its 16 MB cap. V8 starts a full mark-compact
 * whenever the room left under the old-generation limit (then ~16 MB) is no larger than the young
 * generation, and the limit it recomputes afterwards is about the same, so the processes ran a full GC every
 * ~100 ms (about 110 per GB through the agent, each a 3-15 ms pause) that freed almost nothing. Starting the
 * old generation at 64 MiB leaves room for the young generation: 0-7 full GCs per 4 GiB, bulk throughput
 * +35-50 %, CPU per byte -35 %, and the pauses gone from the latency of other streams (docs/BENCHMARKS.md,
 * "Heap sizing"). Cost: up to ~64 MiB of heap the process may fill with garbage before its first full GC.
 */
export const NODE_FLAGS: readonly string[] = ['--initial-old-space-size=64'];
