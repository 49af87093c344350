/**
 * The hub's view of each agent's session: connected (relay connection up or the direct path current, a
 * handshake done, an authenticated datagram within deadAfterMs, or within idleProbeMs + deadAfterMs while the
 * agent is idle), path (the agent's current path), lastHandshake, rttMs, bytesIn/Out. Every
 * statusIntervalMs it reports every agent (onStatus) and pings each connected agent whose session is up
 * with ICMP echo (its prober measures the RTT from the replies): every probeIntervalMs while the agent's
 * tunnel carries application traffic; idle, only once nothing came from it for idleProbeMs + probeIntervalMs
 * (an idle agent's own probes, every 25 s, normally keep it alive: an idle agent costs a few packets a minute).
 * An agent's relay connection closing (`relayGone`) is reported at once: a relayed agent is not connected from then
 * on; an agent on its direct path is probed at once, shows disconnected until it answers a probe sent after the loss,
 * and is reported again RELAY_LOSS_CONFIRM_MS later (connected then if it answered).
 */
import type { Clock, TimerHandle } from '../../../shared/clock.js';
import type { PathKind } from '../../../shared/net/tunnel-endpoint/path.js';
import type { PathSnapshot } from '../../../shared/net/tunnel-endpoint/path-selector.js';
import type { Peer } from '../../../shared/net/wireguard/device.js';
import type { ConnectionPathDetail, ConnectionStatus } from '../../control/model/connection-status.js';
import type { AgentRecord } from './peer-directory.js';

export const DEFAULT_STATUS_INTERVAL_MS = 2_000;
/** The hub pings each agent this often (RTT), once its session is up. */
export const DEFAULT_HUB_PROBE_INTERVAL_MS = 5_000;
/** No authenticated datagram from an agent for this long: not connected (idle: idleProbeMs longer). */
export const DEFAULT_HUB_DEAD_AFTER_MS = 15_000;
/** An idle agent probes the hub this often (its liveness pace, shared/net/tunnel-endpoint/liveness.ts). */
export const DEFAULT_HUB_IDLE_PROBE_MS = 25_000;
/** After its relay connection closed, a direct agent must answer within this long to stay connected. */
export const RELAY_LOSS_CONFIRM_MS = 2_000;

/** The parts of an agent record the status reads and updates. */
export type StatusRecord = Pick<
  AgentRecord,
  'cluster' | 'key' | 'prober' | 'lastRxBytes' | 'lastRxAt' | 'lastProbeAt'
> & {
  readonly peer: Peer;
  readonly paths?: {
    readonly path: { readonly kind: PathKind } | undefined;
    /** A copy of each datagram also goes over the relay (a direct remote being confirmed). */
    readonly duplicating?: boolean;
    /** Application traffic to or from the agent lately (absent: treated as active). */
    readonly active?: boolean;
  };
};

export interface HubStatusOptions {
  clock: Clock;
  /** Whether the agent's key holds a relay connection now. */
  isConnected(key: Buffer): boolean;
  /** The agents reported on each tick. */
  agents(): Iterable<StatusRecord>;
  /** `key`: the agent's (a cluster of agent replicas has several). */
  onStatus?: (cluster: string, status: ConnectionStatus, key: Buffer) => void;
  /** The agent's path selector's view (remote, RTTs, last switch, reason); absent without disco. */
  pathOf?: (key: Buffer) => PathSnapshot | undefined;
  statusIntervalMs?: number;
  probeIntervalMs?: number;
  deadAfterMs?: number;
  /** How often an idle agent probes the hub (default DEFAULT_HUB_IDLE_PROBE_MS). */
  idleProbeMs?: number;
}

export class HubStatus {
  readonly #options: HubStatusOptions;
  readonly #statusMs: number;
  readonly #probeMs: number;
  readonly #deadMs: number;
  readonly #idleMs: number;
  /** When each agent's relay connection last closed (monotonic ms), while that loss is unconfirmed or current. */
  readonly #relayGoneAt = new WeakMap<StatusRecord, number>();
  #timer: TimerHandle | undefined;
  #closed = false;

  /** Starts the status timer. */
  constructor(opts: HubStatusOptions) {
    this.#options = opts;
    this.#statusMs = opts.statusIntervalMs ?? DEFAULT_STATUS_INTERVAL_MS;
    this.#probeMs = opts.probeIntervalMs ?? DEFAULT_HUB_PROBE_INTERVAL_MS;
    this.#deadMs = opts.deadAfterMs ?? DEFAULT_HUB_DEAD_AFTER_MS;
    this.#idleMs = opts.idleProbeMs ?? DEFAULT_HUB_IDLE_PROBE_MS;
    this.#arm();
  }

  /** The agent's status now (counts bytes received since the last look as a sign of life). */
  of(rec: StatusRecord): ConnectionStatus {
    const now = this.#options.clock.now();
    const peer = rec.peer;
    if (peer.rxBytes !== rec.lastRxBytes) {
      rec.lastRxBytes = peer.rxBytes;
      rec.lastRxAt = now;
    }
    const direct = rec.paths?.path?.kind === 'direct';
    const kind: PathKind = direct && !rec.paths?.duplicating ? 'direct' : 'relayed';
    const connected =
      (this.#options.isConnected(rec.key) || (direct && this.#directAlive(rec))) &&
      peer.lastHandshakeAt !== null &&
      rec.lastRxAt !== null &&
      now - rec.lastRxAt < this.#deadMs + (this.#active(rec) ? 0 : this.#idleMs);
    const snap = connected ? this.#options.pathOf?.(rec.key) : undefined;
    return {
      connected,
      path: connected ? kind : 'none',
      lastHandshake: peer.lastHandshakeAt,
      rttMs: connected ? rec.prober.roundedRttMs : null,
      bytesIn: peer.rxBytes,
      bytesOut: peer.txBytes,
      pathDetail: snap ? pathDetailOf(snap, kind) : null,
    };
  }

  /** Reports the agent's status now (e.g. its relay connection went); nothing once closed. */
  report(rec: StatusRecord): void {
    if (this.#closed) return;
    this.#options.onStatus?.(rec.cluster, this.of(rec), rec.key);
  }

  /**
   * The agent's relay connection closed: reported at once; an agent on its direct path is probed now and
   * reported again once RELAY_LOSS_CONFIRM_MS has passed (not connected then unless it answered).
   */
  relayGone(rec: StatusRecord): void {
    if (this.#closed) return;
    const now = this.#options.clock.now();
    this.#relayGoneAt.set(rec, now);
    if (rec.paths?.path?.kind === 'direct' && rec.peer.isSessionUp) {
      rec.lastProbeAt = now;
      rec.peer.send(rec.prober.probe());
      // A timer may fire a little before its time by the monotonic clock: report once the loss is surely older.
      this.#options.clock.setTimer(RELAY_LOSS_CONFIRM_MS + 20, () => this.report(rec));
    }
    this.report(rec);
  }

  /** The agent's peer completed a handshake: a sign of life, reported at once. */
  onHandshake(rec: StatusRecord): void {
    rec.lastRxAt = this.#options.clock.now();
    this.report(rec);
  }

  close(): void {
    this.#closed = true;
    this.#options.clock.clearTimer(this.#timer);
  }

  /**
   * A direct agent without its relay connection: alive once it answered a probe sent after the loss (until then it
   * shows disconnected, so a killed agent never flaps back to connected). Bytes that merely arrived after the loss
   * are no proof: a killed agent's last datagrams can still be queued on the hub's UDP socket when its relay
   * connection's close is seen.
   */
  #directAlive(rec: StatusRecord): boolean {
    const goneAt = this.#relayGoneAt.get(rec);
    if (goneAt === undefined) return true;
    const answeredAt = rec.prober.lastAnsweredProbeAt;
    return answeredAt !== null && answeredAt >= goneAt;
  }

  #active(rec: StatusRecord): boolean {
    return rec.paths?.active ?? true;
  }

  /**
   * Active: every probeMs. Idle: until a first RTT is measured, then only when the agent's own probes stopped
   * arriving (every probeMs until one comes).
   */
  #probeDue(rec: StatusRecord, now: number): boolean {
    if (now - rec.lastProbeAt < this.#probeMs) return false;
    if (this.#active(rec) || rec.prober.rttMs === null || rec.lastRxAt === null) return true;
    return now - rec.lastRxAt >= this.#idleMs + this.#probeMs;
  }

  #arm(): void {
    this.#timer = this.#options.clock.setTimer(this.#statusMs, () => {
      if (this.#closed) return;
      const now = this.#options.clock.now();
      for (const rec of this.#options.agents()) {
        const s = this.of(rec);
        if (s.connected && rec.peer.isSessionUp && this.#probeDue(rec, now)) {
          rec.lastProbeAt = now;
          rec.peer.send(rec.prober.probe());
        }
        this.#options.onStatus?.(rec.cluster, s, rec.key);
      }
      this.#arm();
    });
  }
}

/** `host:port`, the host in brackets when it is IPv6. */
function formatHostPort(a: { host: string; port: number }): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** The status form of a selector snapshot; `kind` is the path in use (no reason while it is direct). */
export function pathDetailOf(snap: PathSnapshot, kind: PathKind): ConnectionPathDetail {
  return {
    remote: snap.remote ? formatHostPort(snap.remote) : null,
    rttDirectMs: snap.rttMs.direct ?? null,
    rttRelayedMs: snap.rttMs.relayed ?? null,
    lastSwitch: snap.lastSwitchAt ?? null,
    reason: kind === 'direct' && snap.route === 'direct' ? null : (snap.reason ?? null),
  };
}
