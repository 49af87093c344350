/**
 * The agent's WireGuard session to the hub node over the relay: a DERP client to `wss://<relay>/derp`
 * (CA pin enforced, the relay's DERP key must be the hub key) and a tunnel endpoint
 * (shared/tunnel-endpoint: Device + path manager + stream binding, mux role 'server') with the hub as its
 * only peer (allowed IP = the hub address /32) and a relayed path to it: datagrams to the hub go out as
 * DERP packets to the hub key; DERP packets from the hub go to the endpoint. Streams the hub opens go to
 * `onStream` (the dialer); only the hub may start a stream session.
 *
 * Direct path (agent-direct.ts): when the relay advertises the hub's UDP endpoint and `--egress` is not
 * 443-only, a UDP socket, the agent's candidates and disco with the hub (shared/net/tunnel-endpoint/disco-peers.ts):
 * relay payloads that start with the disco magic go to the disco side, not to WireGuard, and the hub's path
 * follows its selector (direct while its probes answer, the relay otherwise). `setPathPolicy('relay-only')`
 * (the cluster's `path` value) applies at once. Each time the relay connection comes (back) up the direct
 * path is dropped (it may be on another replica of a relay fleet, which answers only on its own UDP
 * endpoints) and found again from the hub's call-me-maybe over the new connection.
 *
 * Timers (the hub's liveness in the endpoint, shared/net/tunnel-endpoint/peer-liveness.ts): an ICMP echo to the
 * hub (RTT, liveness) every probeIntervalMs (2 s) while the tunnel carries application traffic, every
 * idleProbeIntervalMs (25 s) while idle; an unanswered probe is retried
 * every 2 s and wakes the path selector (the path in use may have gone silent). The session counts as
 * connected while the relay is connected, a handshake completed and no probe stayed unanswered for
 * deadAfterMs (6 s). When that lapses, or whenever the relay connection comes (back) up, a new
 * handshake is started (WireGuard itself limits initiations to one per 5 s). The DERP client reconnects
 * forever (backoff with jitter, capped at 30 s; Restarting frames shorten it).
 */

import { type Clock, realClock, type TimerHandle } from '../../shared/clock.js';
import { TunnelError } from '../../shared/errors.js';
import { parseKey, publicKeyFromPrivate } from '../../shared/keys.js';
import { connectDerp, type DerpClient, type DerpClientOptions } from '../../shared/net/derp/client.js';
import { DerpCloseCode } from '../../shared/net/derp/close-codes.js';
import { parseIpv4Address } from '../../shared/net/ip/index.js';
import type { MuxStream } from '../../shared/net/mux/mux-stream.js';
import type { PathTimers } from '../../shared/net/tunnel-endpoint/path-timers.js';
import type { PeerLiveness } from '../../shared/net/tunnel-endpoint/peer-liveness.js';
import type { PeerPaths } from '../../shared/net/tunnel-endpoint/peer-paths.js';
import { RelayedPath } from '../../shared/net/tunnel-endpoint/relayed-path.js';
import { DEFAULT_LIVENESS_PACE, TunnelEndpoint } from '../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import type { WireGuardTimers } from '../../shared/net/wireguard/constants.js';
import type { Peer } from '../../shared/net/wireguard/device.js';
import { TRANSPORT_OVERHEAD } from '../../shared/net/wireguard/transport.js';
import type { ConnectionStats, PathDetail, Tunnel } from '../agent/types.js';
import { AgentDirect, directWanted } from './agent-direct.js';
import { PathChangeLog, type PathView } from './path-change-log.js';
import { RelayOutageLog } from './relay-outage-log.js';

export const DEFAULT_PROBE_INTERVAL_MS = DEFAULT_LIVENESS_PACE.probeMs;
export const DEFAULT_DEAD_AFTER_MS = DEFAULT_LIVENESS_PACE.deadMs;
/** While draining, the open streams are counted this often. */
const DRAIN_CHECK_MS = 100;
/** status.json is refreshed at least this often while running (bytes, RTT). */
export const STATUS_REFRESH_MS = 10_000;

/** The cluster's `path` value: auto (direct when it works) or relay-only. */
export type PathPolicy = 'auto' | 'relay-only';

export interface AgentSessionOptions {
  privateKey: Buffer | string;
  tunnel: Tunnel;
  /** `sha256:<hex>` pin of the relay certificate, or a PEM CA (one of them, as the state dir says). */
  caPin?: string | undefined;
  ca?: string | undefined;
  clock?: Clock;
  /** Called when connected/handshake change, and every STATUS_REFRESH_MS. */
  onChange?: () => void;
  /** A stream the hub opened (the dialer answers it). */
  onStream?: (stream: MuxStream) => void;
  /** The relay closed the relay connection as not admitted or revoked (close 4001 / 4004). */
  onRelayRefused?: () => void;
  /** Inner packets that are neither stream datagrams nor the session's own ICMP. `packet` is a view
   * into the decrypted datagram, which nothing reuses (see Device.receive). */
  onInnerPacket?: (packet: Buffer) => void;
  log?: (line: string) => void;
  probeIntervalMs?: number;
  /** Probe pace while the tunnel carries no application traffic (default 25 s). */
  idleProbeIntervalMs?: number;
  deadAfterMs?: number;
  timers?: Partial<WireGuardTimers>;
  /** `--egress`: 443-only sends no UDP at all (default auto: UDP to the hub when the relay offers it). */
  egress?: '443-only' | 'auto';
  /** `--stun-server`: STUN servers (`host:port`) asked besides the relay's responder. */
  stunServers?: readonly string[];
  /** The cluster's `path` value at start (default auto); setPathPolicy() changes it. */
  pathPolicy?: PathPolicy;
  /** Path selector timers (tests). */
  pathTimers?: Partial<PathTimers>;
  /** Extra relay-client options (backoff, ping intervals) and a replaceable connector (tests). */
  derp?: Partial<Omit<DerpClientOptions, 'url' | 'keyPair' | 'onPacket'>>;
  connect?: (o: DerpClientOptions) => DerpClient;
}

export class AgentSession {
  readonly endpoint: TunnelEndpoint;
  readonly derp: DerpClient;
  readonly hub: Peer<PeerPaths>;
  readonly #options: AgentSessionOptions;
  readonly #clock: Clock;
  readonly #hubKey: Buffer;
  readonly #hubAddr: number;
  readonly #probeMs: number;
  /** The hub's echo probes (the endpoint answers and takes ICMP echo, shared/net/tunnel-endpoint/echo-answer.ts). */
  readonly #liveness: PeerLiveness;
  readonly #direct: AgentDirect | undefined;
  readonly #outage: RelayOutageLog;
  #timer: TimerHandle | undefined;
  #connected = false;
  #lastRefresh: number;
  #waiters: Array<{ resolve: () => void; reject: (e: Error) => void; t: TimerHandle }> = [];
  /** The relay client's last state was `connected` (its first state arrives before `derp` is set). */
  #relayConnected = false;
  /** Why the relay connection is down (`CODE: message`), null while it is up or before it first failed. */
  #relayError: string | null = null;
  /** The path, remote and reason status.json last showed (a change is written at the next tick). */
  #reportedPath = '';
  readonly #pathLog = new PathChangeLog();
  #closed = false;

  constructor(o: AgentSessionOptions) {
    this.#options = o;
    this.#clock = o.clock ?? realClock;
    this.#probeMs = o.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.#lastRefresh = this.#clock.now();
    const t = o.tunnel;
    const priv =
      typeof o.privateKey === 'string' ? parseKey(o.privateKey, 'agent private key') : o.privateKey;
    this.#hubKey = parseKey(t.hubPublicKey, 'hub public key');
    const [addr] = t.address.split('/');
    const hubAddr = parseIpv4Address(t.hubAddress);
    this.#hubAddr = hubAddr;
    const onStream = o.onStream;
    const egress = o.egress ?? 'auto';
    this.#direct = directWanted(t, egress)
      ? new AgentDirect({
          clock: this.#clock,
          tunnel: t,
          hubKey: this.#hubKey,
          stunServers: o.stunServers ?? [],
          log: o.log,
        })
      : undefined;
    let hubPaths: PeerPaths | undefined;
    this.endpoint = new TunnelEndpoint({
      privateKey: priv,
      address: parseIpv4Address(addr ?? ''),
      clock: this.#clock,
      timers: o.timers,
      liveness: {
        probeMs: this.#probeMs,
        idleProbeMs: o.idleProbeIntervalMs ?? DEFAULT_LIVENESS_PACE.idleProbeMs,
        deadMs: o.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS,
      },
      onEcho: (e) => {
        if (e.kind === 'answered') this.#evaluate();
      },
      udp: this.#direct?.sender,
      disco: {
        conditions: { egress: egress === '443-only' ? '443-only' : 'any', policy: o.pathPolicy ?? 'auto' },
        onObserved: (_hub, observed) => this.endpoint.candidates?.observed(observed),
        timers: o.pathTimers,
      },
      streams: {
        role: 'server',
        accept: (remote) => remote === hubAddr,
        onStream: onStream ? (s: MuxStream) => onStream(s) : undefined,
      },
      onPacket: (p) => this.#options.onInnerPacket?.(p),
      // The relay's datagrams come from the hub only (checked below): its paths, straight to the device.
      intake: { peerOf: () => hubPaths },
    });
    const hub = this.endpoint.addPeer({
      publicKey: this.#hubKey,
      presharedKey: t.presharedKey,
      address: t.hubAddress,
      disco: true,
    });
    this.hub = hub.peer;
    hubPaths = hub.paths;
    this.#liveness = hub.liveness;
    this.hub.on('session', () => {
      // The hub may have restarted: it hears our candidates again.
      this.endpoint.disco?.announce(this.#hubKey);
      this.#probe();
      this.#changed();
    });
    const connect = o.connect ?? connectDerp;
    this.#outage = new RelayOutageLog(t.derpUrl);
    this.derp = connect({
      ...o.derp,
      url: t.derpUrl,
      keyPair: { privateKey: priv, publicKey: publicKeyFromPrivate(priv) },
      serverPublicKey: this.#hubKey,
      caPin: o.caPin || o.derp?.caPin,
      ca: o.ca || o.derp?.ca,
      clock: this.#clock,
      onPacket: (src, payload) => {
        if (src.equals(this.#hubKey)) this.endpoint.receiveRelayed(src, payload);
      },
      onState: (e) => {
        this.#relayConnected = e.state === 'connected';
        o.derp?.onState?.(e);
        if (e.state === 'connected') this.#noteRelayError(null);
        else if (e.state === 'reconnecting')
          this.#noteRelayError(
            e.error
              ? `${e.error.code}: ${e.error.message}`
              : `relay connection closed (code ${e.closeCode ?? '-'})`,
          );
        if (e.state === 'reconnecting' && isRefusal(e.closeCode)) o.onRelayRefused?.();
        const line = this.#outage.note(e, this.#clock.now());
        if (line !== null) o.log?.(line);
        // A new relay connection may be on another relay replica, which holds none of our sessions and
        // answers on its own UDP endpoints only: the direct path to the old one ends now (the handshake
        // below goes over the relay), and the new replica's call-me-maybe names where to go direct.
        // Forced past the one-per-5-s limit: the last handshake may be seconds old.
        if (e.state === 'connected') {
          this.endpoint.disco?.forgetPaths(this.#hubKey);
          this.hub.sendHandshakeInitiation(false, { force: true });
        }
        this.#evaluate();
      },
    });
    hub.paths.add(new RelayedPath(this.derp, this.#hubKey));
    void this.#direct?.start(this.endpoint);
    this.#armTick();
  }

  /** The cluster's `path` value changed: relay-only moves the hub to the relay and stops UDP at once. */
  setPathPolicy(policy: PathPolicy): void {
    this.endpoint.disco?.setConditions({ policy });
    this.#changed();
  }

  /** The path selector's view of the hub: remote, RTT per path, last switch, why relayed. */
  pathDetail(): PathDetail | undefined {
    const snap = this.endpoint.disco?.snapshot(this.#hubKey);
    if (!snap) return undefined;
    const path = this.endpoint.paths.get(this.#hubKey.toString('base64'))?.path;
    const direct = path?.kind === 'direct';
    return {
      remote: snap.remote ? formatHostPort(snap.remote) : null,
      rttDirectMs: snap.rttMs.direct ?? null,
      rttRelayedMs: snap.rttMs.relayed ?? null,
      lastSwitch: snap.lastSwitchAt === undefined ? null : new Date(snap.lastSwitchAt).toISOString(),
      reason: direct && snap.route === 'direct' ? null : (snap.reason ?? null),
      nat: this.endpoint.disco?.conditions.stun ?? 'unknown',
      mtu: path ? path.mtu - TRANSPORT_OVERHEAD : null,
    };
  }

  /** Connection figures for status.json and `tunnel-client status`. */
  stats(): ConnectionStats {
    const at = this.hub.lastHandshakeAt;
    const paths = this.endpoint.paths.get(this.#hubKey.toString('base64'));
    const kind = paths?.path?.kind === 'direct' && !paths.duplicating ? 'direct' : 'relayed';
    return {
      connected: this.#connected,
      path: this.#connected ? kind : 'none',
      pathDetail: this.pathDetail(),
      rttMs: this.#connected ? this.#liveness.prober.roundedRttMs : null,
      lastHandshake: at === null ? null : new Date(at).toISOString(),
      bytesIn: this.hub.rxBytes,
      bytesOut: this.hub.txBytes,
      relayError: this.#relayError,
    };
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Resolves once the session is up (handshake done and the hub answered a probe). */
  whenUp(timeoutMs = 0): Promise<void> {
    if (this.#connected) return Promise.resolve();
    if (this.#closed) return Promise.reject(new TunnelError('CLOSED', 'session is closed'));
    return new Promise((resolve, reject) => {
      const t =
        timeoutMs > 0
          ? this.#clock.setTimer(timeoutMs, () => {
              this.#waiters = this.#waiters.filter((w) => w.t !== t);
              reject(new TunnelError('TIMEOUT', `WireGuard session not up within ${timeoutMs} ms`));
            })
          : { id: -1 };
      this.#waiters.push({ resolve, reject, t });
    });
  }

  /**
   * Graceful stop, before close(): tells the hub this agent takes no new streams (GoAway on the stream session; the
   * hub holds new streams for the agent's next run, relay/data/proxy/agent-drains.ts) and resolves once the open
   * streams ended or `graceMs` passed. Returns how many streams were still open then.
   */
  async drain(graceMs: number): Promise<number> {
    const streams = this.endpoint.streams;
    const link = streams.link(this.#hubAddr);
    link?.mux.goAway();
    const until = this.#clock.now() + graceMs;
    // The GoAway must reach the hub before the session closes (over the relay a close right after it can cut it
    // off, and the hub would answer the next request AGENT_NOT_CONNECTED instead of holding it for the next run):
    // wait one check for it to be written, then until the hub acknowledged it and the open streams ended.
    const unacknowledged = () => link !== undefined && !link.closed && link.arq.bufferedBytes > 0;
    let checks = 0;
    while (
      !this.#closed &&
      (checks++ === 0 || streams.streamCount > 0 || unacknowledged()) &&
      this.#clock.now() < until
    ) {
      await new Promise<void>((r) => this.#clock.setTimer(DRAIN_CHECK_MS, r));
    }
    return streams.streamCount;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#clock.clearTimer(this.#timer);
    this.derp.close();
    this.endpoint.close();
    await this.#direct?.close();
    this.#connected = false;
    const err = new TunnelError('CLOSED', 'session is closed');
    for (const w of this.#waiters.splice(0)) {
      this.#clock.clearTimer(w.t);
      w.reject(err);
    }
  }

  #relayUp(): boolean {
    return this.#relayConnected;
  }

  #probe(): void {
    if (!this.#relayUp() || !this.hub.isSessionUp) return;
    this.#liveness.probe();
  }

  /**
   * The relay answered the agent's lease: when the relay connection is waiting out its backoff (the relay was
   * down), it reconnects now instead of at the end of the wait.
   */
  relayAnswered(): void {
    if (this.derp.reconnectNow())
      this.#options.log?.('the relay answers again (lease renewed): reconnecting now');
  }

  /** The hub's paths: their selector's view of application traffic decides the probe pace. */
  #hubPaths(): PeerPaths | undefined {
    return this.endpoint.paths.get(this.#hubKey.toString('base64'));
  }

  #armTick(): void {
    this.#timer = this.#clock.setTimer(this.#probeMs, () => {
      if (this.#closed) return;
      const paths = this.#hubPaths();
      // An unanswered probe: the path in use may have gone silent; the selector checks its paths fast.
      if (this.#liveness.retrying) paths?.noteTraffic();
      if (this.#liveness.due(paths?.active ?? true)) this.#probe();
      this.#evaluate();
      // A silent path (relay or hub restarted, keys lost): start over with a fresh handshake.
      if (this.#relayUp() && this.#liveness.stale) {
        this.hub.sendHandshakeInitiation(false);
      }
      const st = this.stats();
      const changed = this.#pathLog.note(this.#pathView());
      if (changed !== null) this.#options.log?.(changed);
      const path = `${st.path} ${st.pathDetail?.remote ?? '-'} ${st.pathDetail?.reason ?? '-'}`;
      if (path !== this.#reportedPath || this.#clock.now() - this.#lastRefresh >= STATUS_REFRESH_MS) {
        this.#reportedPath = path;
        this.#changed();
      }
      this.#armTick();
    });
  }

  #pathView(): PathView {
    const paths = this.#hubPaths();
    const direct = paths?.path?.kind === 'direct' && !paths.duplicating;
    const detail = this.pathDetail();
    return {
      path: this.#connected ? (direct ? 'direct' : 'relayed') : 'none',
      remote: detail?.remote ?? null,
      reason: detail?.reason ?? null,
    };
  }

  #evaluate(): void {
    const up = !this.#closed && this.#relayUp() && this.hub.isSessionUp && !this.#liveness.stale;
    if (up === this.#connected) return;
    this.#connected = up;
    this.#options.log?.(up ? this.#pathLog.sessionUp(this.#pathView()) : this.#pathLog.sessionDown());
    if (up) {
      for (const w of this.#waiters.splice(0)) {
        this.#clock.clearTimer(w.t);
        w.resolve();
      }
    }
    this.#changed();
  }

  /** Reported at once (status.json), not at the next lease or tick. */
  #noteRelayError(text: string | null): void {
    if (text === this.#relayError) return;
    this.#relayError = text;
    this.#changed();
  }

  #changed(): void {
    this.#lastRefresh = this.#clock.now();
    this.#options.onChange?.();
  }
}

/** Close codes that say the relay no longer admits this key (the cluster was deleted, denied or unjoined). */
function isRefusal(code: number | undefined): boolean {
  return code === DerpCloseCode.NotAdmitted || code === DerpCloseCode.ClosedByServer;
}

function formatHostPort(a: { host: string; port: number }): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

export function startAgentSession(o: AgentSessionOptions): AgentSession {
  return new AgentSession(o);
}
