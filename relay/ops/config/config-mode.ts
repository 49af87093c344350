/**
 * `--mode`: what a relay process is.
 *   all    (default; `hub` is the same) the whole relay: API, DERP server, hub node (it holds the hub's WireGuard
 *          key), proxies.
 *   relay  a forwarding-only replica of a fleet (relay/fleet/tier/): it terminates TLS with the fleet certificate and
 *          forwards every request, /derp included, over the mesh to a hub replica. It holds no hub key and decrypts
 *          nothing, so everything that would give it a hub key or a WireGuard port is refused here.
 */
import { TunnelError } from '../../../shared/errors.js';
import type { Sourced } from './config-store.js';

export type RelayMode = 'hub' | 'relay';
/** The spellings --mode takes: `all` (the contract's) and `hub` both give the hub mode. */
const SPELLINGS: ReadonlyMap<unknown, RelayMode> = new Map<unknown, RelayMode>([
  ['all', 'hub'],
  ['hub', 'hub'],
  ['relay', 'relay'],
]);

function bad(key: string, source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `${key} (${source}): ${reason}`);
}

export function parseMode(v: Sourced): RelayMode {
  if (!v) return 'hub';
  const found = SPELLINGS.get(v[0]);
  if (found === undefined) bad('mode', v[1], `expected all (or hub) or relay, got ${JSON.stringify(v[0])}`);
  return found;
}

/** What the relay mode needs and refuses, each with where it was given. */
export interface RelayModeSettings {
  mode: Sourced;
  postgres: boolean;
  meshKeyFile: Sourced;
  hubKeyFile: Sourced;
  udpPort: Sourced;
  plainHttp: boolean;
  derpMaxHandshakes: Sourced;
}

const NO_HUB_KEY = 'a relay-mode replica holds no hub key (the hub replicas hold it)';

/** BAD_CONFIG naming the flag when a relay-mode replica is given something only a hub has, or lacks the mesh. */
export function checkRelayMode(s: RelayModeSettings): void {
  if (!s.mode || parseMode(s.mode) !== 'relay') return;
  const where = s.mode[1];
  if (!s.postgres) {
    bad(
      'store',
      where,
      "--mode relay needs the fleet's postgres:// --store (it reads where agents are from it)",
    );
  }
  if (!s.meshKeyFile) {
    bad('mesh-key-file', where, "--mode relay forwards over the mesh: give the fleet's --mesh-key-file");
  }
  if (s.plainHttp) bad('plain-http', where, '--mode relay terminates TLS itself with the fleet certificate');
  if (s.hubKeyFile) bad('hub-key-file', s.hubKeyFile[1], `${NO_HUB_KEY}; remove it`);
  if (s.derpMaxHandshakes) {
    bad(
      'derp-max-handshakes',
      s.derpMaxHandshakes[1],
      'applies to hub replicas (DERP ends there), not --mode relay',
    );
  }
  if (s.udpPort && s.udpPort[0] !== 'off' && s.udpPort[0] !== false) {
    bad(
      'udp-port',
      s.udpPort[1],
      `${JSON.stringify(s.udpPort[0])}: --mode relay has no WireGuard UDP port (${NO_HUB_KEY}); remove it or give off`,
    );
  }
}
