/**
 * The ports a relay takes before anything is written or issued (port-hold.ts): the TLS port is held, the hub's
 * WireGuard UDP port, the STUN responder and the metrics port (`--metrics-listen`) are bound, so a taken port fails
 * the start with the data dir as it was. All are tried at once, and every one that cannot be bound is named in the
 * one BAD_CONFIG. Each is released by `undo` when a later step fails.
 */
import type { Clock } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { type StunResponder, startStunResponder } from '../data/stun/stun-responder.js';
import { type HubUdp, openHubUdp } from '../data/udp/hub-udp.js';
import type { RelayConfig } from '../ops/config/config.js';
import { MetricsPort } from '../ops/http/metrics-port.js';
import { type HeldPort, holdListenPort } from '../ops/port-hold.js';
import type { UndoStack } from '../ops/undo-stack.js';

export interface RelayPorts {
  listen: HeldPort;
  /** The hub's WireGuard UDP port (`--udp-port`), or null when it is off. */
  udp: HubUdp | null;
  /** The STUN responder (`--stun-port`), or null when it is off. */
  stun: StunResponder | null;
  /** The plain-HTTP /metrics port (`--metrics-listen`), or null when /metrics is on the main port. */
  metrics: MetricsPort | null;
}

function openStun(config: RelayConfig, clock: Clock): Promise<StunResponder | null> {
  if (config.stunPort === null) return Promise.resolve(null);
  return startStunResponder({ host: config.listen.host, port: config.stunPort, clock });
}

function openMetrics(config: RelayConfig): Promise<MetricsPort | null> {
  if (config.metricsListen === null) return Promise.resolve(null);
  return MetricsPort.open(config.metricsListen.host, config.metricsListen.port);
}

/** One error for all the ports that failed: BAD_CONFIG naming each when they all are BAD_CONFIG. */
function oneError(errors: readonly unknown[]): unknown {
  if (errors.length === 1) return errors[0];
  const bad = errors.filter((e): e is TunnelError => e instanceof TunnelError && e.code === 'BAD_CONFIG');
  if (bad.length < errors.length) return errors.find((e) => !bad.includes(e as TunnelError));
  return new TunnelError('BAD_CONFIG', bad.map((e) => e.message).join('; '));
}

export async function openPorts(config: RelayConfig, clock: Clock, undo: UndoStack): Promise<RelayPorts> {
  const [listen, udp, stun, metrics] = await Promise.allSettled([
    holdListenPort(config.listen.host, config.listen.port),
    openHubUdp(config),
    openStun(config, clock),
    openMetrics(config),
  ]);
  if (listen.status === 'fulfilled') undo.push(() => listen.value.release());
  if (udp.status === 'fulfilled') undo.push(async () => udp.value?.close());
  if (stun.status === 'fulfilled') undo.push(async () => stun.value?.close());
  if (metrics.status === 'fulfilled') undo.push(async () => metrics.value?.close());
  const errors = [listen, udp, stun, metrics].flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
  if (errors.length > 0) return undo.abort(oneError(errors));
  return { listen: v(listen), udp: v(udp), stun: v(stun), metrics: v(metrics) };
}

function v<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
}
