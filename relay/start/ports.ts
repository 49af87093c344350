/**
 * The ports a relay takes before anything is written or issued (port-hold.ts): the TLS port is held, the hub's
 * WireGuard UDP port and the STUN responder are bound, so a taken port fails the start with the data dir as it
 * was. Each is released by `undo` when a later step fails.
 */
import type { Clock } from '../../shared/clock.js';
import { type StunResponder, startStunResponder } from '../data/stun/stun-responder.js';
import { type HubUdp, openHubUdp } from '../data/udp/hub-udp.js';
import type { RelayConfig } from '../ops/config/config.js';
import { type HeldPort, holdListenPort } from '../ops/port-hold.js';
import type { UndoStack } from '../ops/undo-stack.js';

export interface RelayPorts {
  listen: HeldPort;
  /** The hub's WireGuard UDP port (`--udp-port`), or null when it is off. */
  udp: HubUdp | null;
  /** The STUN responder (`--stun-port`), or null when it is off. */
  stun: StunResponder | null;
}

function openStun(config: RelayConfig, clock: Clock): Promise<StunResponder | null> {
  if (config.stunPort === null) return Promise.resolve(null);
  return startStunResponder({ host: config.listen.host, port: config.stunPort, clock });
}

export async function openPorts(config: RelayConfig, clock: Clock, undo: UndoStack): Promise<RelayPorts> {
  const listen = await holdListenPort(config.listen.host, config.listen.port);
  undo.push(() => listen.release());
  const udp = await undo.guard(() => openHubUdp(config));
  undo.push(async () => udp?.close());
  const stun = await undo.guard(() => openStun(config, clock));
  undo.push(async () => stun?.close());
  return { listen, udp, stun };
}
