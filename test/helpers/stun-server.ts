/**
 * STUN servers inside a network namespace: the relay's own STUN responder (relay/data/stun/stun-responder.ts, the
 * one `tunnel-relay serve --stun-port` runs) bound to each of `hosts` on `port`, in one node process under
 * `ip netns exec` (a socket cannot be opened inside a namespace from this process). Each responder answers from
 * the address it was asked at, so one namespace with two addresses gives two STUN servers at different
 * addresses (what a NAT that maps per destination is told apart by). Runs the built code (dist/, buildIfStale).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Netns } from './netns.js';
import type { ProcessHandle } from './process.js';
import { waitFor } from './wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RESPONDER = join(ROOT, 'dist/relay/data/stun/stun-responder.js');
const CLOCK = join(ROOT, 'dist/shared/clock.js');

const SCRIPT = `
const { startStunResponder } = await import(process.argv[1]);
const { realClock } = await import(process.argv[2]);
const o = JSON.parse(process.argv[3]);
const all = await Promise.all(o.hosts.map((host) => startStunResponder({ host, port: o.port, clock: realClock })));
console.log('stun ready ' + all.map((r, i) => o.hosts[i] + ':' + r.port).join(' '));
setInterval(() => {}, 60_000);
`;

export interface StunServers {
  readonly endpoints: readonly string[];
  stop(): Promise<void>;
}

export async function startStunServers(
  ns: Netns,
  o: { hosts: readonly string[]; port: number; timeoutMs?: number },
): Promise<StunServers> {
  const arg = JSON.stringify({ hosts: o.hosts, port: o.port });
  const proc: ProcessHandle = ns.spawn(
    process.execPath,
    ['--input-type=module', '-e', SCRIPT, RESPONDER, CLOCK, arg],
    {
      timeoutMs: o.timeoutMs ?? 120_000,
    },
  );
  try {
    await waitFor(() => proc.output().includes('stun ready') || !proc.isRunning(), 15_000, 'STUN servers');
    if (!proc.isRunning()) throw new Error(`STUN servers exited: ${proc.output().slice(-500)}`);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { endpoints: o.hosts.map((h) => `${h}:${o.port}`), stop: () => proc.stop() };
}
