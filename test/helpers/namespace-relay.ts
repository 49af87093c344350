/**
 * The relay inside the hub namespace of a double-NAT topology (nat-topology.ts): `tunnel-relay serve` (the built
 * CLI) listening on `0.0.0.0:TLS` with the public URL of the hub router's outside address, and the admin
 * environment that reaches it over the management veth.
 */
import { NODE_FLAGS } from '../../shared/kit/node-flags.js';
import { cleanEnv, RELAY_BIN, type ReadyLine, tempDir } from '../cli-harness.js';
import type { DoubleNatTopology } from './nat-topology.js';
import type { ProcessHandle } from './process.js';
import { pollUntil } from './wait.js';

export interface NamespaceRelayOptions {
  /** The TLS port it listens on (forwarded by the hub's router). */
  tlsPort: number;
  /** Serve flags after the listen, data-dir and public-url ones (--udp-port, --stun-port, ...). */
  args: readonly string[];
  /** Names the relay's temporary data directory. */
  prefix: string;
}

export interface NamespaceRelay {
  proc: ProcessHandle;
  ready: ReadyLine;
  adminEnv: NodeJS.ProcessEnv;
}

export async function startNamespaceRelay(
  t: DoubleNatTopology,
  o: NamespaceRelayOptions,
): Promise<NamespaceRelay> {
  const proc = t.hub.spawn(process.execPath, [
    ...NODE_FLAGS,
    RELAY_BIN,
    'serve',
    '--output',
    'json',
    '--listen',
    `0.0.0.0:${o.tlsPort}`,
    '--data-dir',
    tempDir(`${o.prefix}-`),
    '--public-url',
    `https://${t.hubPublicAddress}:${o.tlsPort}`,
    ...o.args,
  ]);
  // The ready line (stdout and the logs on stderr share the handle's output).
  const { value: line } = await pollUntil({
    what: 'the relay ready line',
    read: () =>
      proc
        .output()
        .split('\n')
        .find((l) => l.includes('"event":"ready"')),
    until: (l) => l !== undefined,
    timeoutMs: 20_000,
    intervalMs: 100,
  });
  const ready = JSON.parse(line ?? '{}') as ReadyLine;
  const adminEnv = cleanEnv({
    TUNNEL_RELAY_URL: `https://${t.hubManagementAddress}:${o.tlsPort}`,
    TUNNEL_ACCESS_KEY: ready.adminKey ?? '',
    TUNNEL_RELAY_CA_PIN: ready.caPin,
  });
  return { proc, ready, adminEnv };
}
