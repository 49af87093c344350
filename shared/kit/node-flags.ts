/**
 * The Node (V8) flags the `tunnel-relay` and `tunnel-client` processes run with. They must be on the `node`
 * command line (V8 reads them when it sizes the heap; `v8.setFlagsFromString` at start-up is too late, and
 * Node refuses them in NODE_OPTIONS), so they are written where a process is started:
 *   - the binaries' first line: `#!/usr/bin/env -S node <flags>` (relay/cli/main.ts, tunnel-client/cli/main.ts),
 *   - deploy/Dockerfile's ENTRYPOINT, the agent's start command in deploy/kubernetes/agent.yaml, `npm start`,
 *   - the benchmarks, the demo and the test harness, which start the binaries with `process.execPath`.
 * node-flags.test.ts checks that every one of those places carries exactly these flags.
 *
 * Both flags keep V8 from running a full mark-compact every ~100-200 ms under bulk traffic. Both processes
 * keep a small old generation (13-20 MB live) and a young generation grown to its 16 MB cap. V8 starts a full
 * GC whenever the room left under the old-generation limit is no larger than the young generation, and the
 * limit is the live size times a growing factor that V8 picks between 1.1 and 4 from its speed estimates;
 * under this load it picked ~1.3, so the processes ran a full GC every ~100-200 ms (3-15 ms each) that freed
 * almost nothing.
 *   - `--initial-old-space-size=64` (MiB) starts the old generation with room for the young generation: it
 *     covers the first full GC, i.e. a process's first ~3 GB of bulk traffic.
 *   - `--heap-growing-percent=200` fixes the factor at 3 for every later limit (20 MB live -> 60 MB limit).
 * Measured (docs/BENCHMARKS.md, "Heap sizing"): full GCs of the agent ~80 per GiB -> under 3, CPU per byte of
 * relay + agent -15 to -35 %, bulk throughput +15-35 %; after 25 s of bulk, relay full GCs ~5 per second
 * (initial flag only) -> none, and the small-request p99 next to the bulk stream 24-26 -> 12-18 ms.
 * Cost: a heap may hold up to 3x its live size (at least 64 MiB) before a full GC frees it.
 * Node 20.20, 22.23, 24.21 and 25.9 accept both (checked 2026-11-24); node exits with "bad option" on a V8 flag
 * it does not know, so a Node upgrade must be checked here (node-flags.test.ts runs them with the Node it runs on).
 */
export const NODE_FLAGS: readonly string[] = ['--initial-old-space-size=64', '--heap-growing-percent=200'];
