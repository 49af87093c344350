/**
 * A STUN Binding probe run inside a network namespace: one UDP socket (on `localPort`, default ephemeral)
 * sends a Binding request to each target and reports the mapped address each one answered (`a.b.c.d:port`), or
 * null for a target that did not answer within the timeout. It runs the built codec (dist/, buildIfStale) in a
 * node process under `ip netns exec`, since a socket cannot be opened inside a namespace from this process.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Netns } from './netns.js';

const CODEC = join(fileURLToPath(new URL('../..', import.meta.url)), 'dist/shared/net/stun/stun-codec.js');

const SCRIPT = `
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
const codec = await import(process.argv[1]);
const o = JSON.parse(process.argv[2]);
const out = o.targets.map(() => null);
const ids = o.targets.map(() => randomBytes(12));
const s = dgram.createSocket('udp4');
const done = () => { console.log(JSON.stringify(out)); process.exit(0); };
s.on('message', (m) => {
  if (!codec.isStunBindingSuccess(m)) return;
  const i = ids.findIndex((id) => m.subarray(8, 20).equals(id));
  const a = i < 0 ? null : codec.decodeMappedAddress(m);
  if (a) out[i] = codec.formatStunAddress(a);
  if (out.every((x) => x !== null)) done();
});
s.bind(o.localPort, () => {
  o.targets.forEach((t, i) => s.send(codec.encodeBindingRequest(ids[i]), t.port, t.host));
});
setTimeout(done, o.timeoutMs);
`;

export interface StunTarget {
  host: string;
  port: number;
}

export async function stunProbe(
  ns: Netns,
  o: { targets: readonly StunTarget[]; localPort?: number; timeoutMs?: number },
): Promise<Array<string | null>> {
  const timeoutMs = o.timeoutMs ?? 2_000;
  const arg = JSON.stringify({ targets: o.targets, localPort: o.localPort ?? 0, timeoutMs });
  const r = await ns.exec(process.execPath, ['--input-type=module', '-e', SCRIPT, CODEC, arg], {
    timeoutMs: timeoutMs + 5_000,
  });
  const parsed: unknown = JSON.parse(r.stdout.trim());
  if (!Array.isArray(parsed)) throw new Error(`stun probe printed ${r.stdout.slice(0, 200)}`);
  return parsed.map((x) => (typeof x === 'string' ? x : null));
}
