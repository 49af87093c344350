/**
 * The running agent: from saved state, waits while the registration is Pending, then keeps a lease,
 * keeps the effective values current (refetched when the lease reports a new valuesVersion) and writes
 * status.json on every change. It never gives up: every failure is retried with backoff.
 *
 * The data plane plugs in through `dataPlane`: it is started once the cluster is Accepted and its
 * stats() feed the status file. Until one is given, the agent reports "not connected, path none".
 */
import type { ClusterStatus } from '../../shared/api/cluster-status.js';
import { withKubeFacts } from '../../shared/api/kube-facts.js';
import type { LeaseReply } from '../../shared/api/lease.js';
import { type Clock, realClock, type TimerHandle } from '../../shared/clock.js';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import type { ProxySettings } from '../../shared/kit/proxy/proxy-config.js';
import type { Values } from '../../shared/kit/values/deep-merge.js';
import { effectiveValues } from '../../shared/kit/values/values-file.js';
import type { AgentApi } from './api.js';
import { BACKOFF_CAP_MS, Backoff, jittered } from './backoff.js';
import { LeaseLoop } from './lease-loop.js';
import { ReasonReport } from './reason-report.js';
import { type StateDir, stateDirFlag } from './state-dir.js';
import {
  type AgentState,
  type AgentStatusFile,
  type ConnectionStats,
  DISCONNECTED,
  type Tunnel,
} from './types.js';

/** How often a Pending agent asks whether it was accepted. */
export const PENDING_POLL_MS = 2_000;
/** How often the "still waiting" progress line repeats. */
export const PROGRESS_EVERY_MS = 15_000;
/**
 * A graceful stop (SIGTERM) waits this long for the streams the hub opened; the agent manifests' termination grace
 * (relay/control/manifests/agent-manifests.ts) is longer.
 */
export const AGENT_STOP_GRACE_MS = 20_000;
/** The relay refusing the agent's relay connection asks the registration at once, at most this often. */
export const REFUSAL_CHECK_GAP_MS = 2_000;

export interface DataPlane {
  stats(): ConnectionStats;
  /** Resolves once the session is up (`join --wait`); data planes without one count as up at once. */
  whenUp?(timeoutMs?: number): Promise<void>;
  /**
   * Graceful stop: the hub is told this agent takes no new streams; resolves once the open ones ended or `graceMs`
   * passed, with how many were still open.
   */
  drain?(graceMs: number): Promise<number>;
  /** The effective values changed (or the data plane just started): settings it reads apply at once. */
  applyValues?(values: Values): void;
  /** A lease renewal succeeded: the relay answers, so a relay connection waiting to retry tries now. */
  relayAnswered?(): void;
  close(): Promise<void>;
}

export type DataPlaneFactory = ((ctx: {
  readonly state: AgentState;
  readonly tunnel: Tunnel;
  readonly privateKey: string;
  /** Proxy settings for the relay WebSocket (shared/proxy); undefined: direct. */
  readonly proxy?: ProxySettings;
  /** The data plane's connection figures changed: status.json is rewritten. */
  readonly onChange: () => void;
  /**
   * The relay closed or refused the relay connection as not admitted (cluster deleted, denied, unjoined): the agent
   * asks its registration at once and stops when it is over, instead of at its next lease.
   */
  readonly onRelayRefused?: () => void;
}) => Promise<DataPlane>) & {
  /**
   * Checks the data plane's own settings (environment, files) before `join` registers or `run` starts, so a
   * bad one is a BAD_CONFIG exit at once instead of a data plane that never starts (and, for `join`, a
   * single-use PSK spent for nothing). Throws a TunnelError.
   */
  readonly check?: () => void;
};

export interface AgentOptions {
  readonly stateDir: StateDir;
  readonly api: AgentApi;
  /** Parsed --values files, in order. */
  readonly valuesFiles: readonly Values[];
  readonly clock?: Clock;
  /** Progress and notes for people (stderr). */
  readonly log?: (line: string) => void;
  /**
   * Where the "still Pending" line goes on every poll (a terminal that rewrites one line). Without it,
   * the line goes to `log` at once and then every PROGRESS_EVERY_MS.
   */
  readonly progress?: (line: string) => void;
  readonly dataPlane?: DataPlaneFactory;
  /** Proxy settings handed to the data plane (the relay client gets its own connectVia). */
  readonly proxy?: ProxySettings;
  readonly random?: () => number;
  /**
   * The Kubernetes facts reported as claims with each lease (shared/api/kube-facts.ts), started once Accepted;
   * `onChange` renews the lease early so the relay has them at once.
   */
  readonly clusterFacts?: (onChange: () => void) => FactsSource;
}

/** Claims the agent collects itself (tunnel-client/dialer/cluster-facts.ts). */
export interface FactsSource {
  current(): Readonly<Record<string, string>>;
  start(): void;
  stop(): void;
}

type Waiter = { resolve: () => void; reject: (err: unknown) => void };

/**
 * The error that ends the agent when the relay says its registration is over (denied, or the
 * credential unknown because the cluster was deleted), or null for an error worth retrying.
 */
export function registrationEnded(err: unknown, cluster: string, stateDir: string): TunnelError | null {
  const dirFlag = stateDirFlag(stateDir);
  if (isTunnelError(err, 'CLUSTER_DENIED')) {
    return new TunnelError(
      'CLUSTER_DENIED',
      `cluster ${cluster} was denied by an administrator, so the agent stopped. Ask the hub operator to run ` +
        `'tunnel-relay cluster accept ${cluster}', then run 'tunnel-client run${dirFlag}' again; or run ` +
        `'tunnel-client unjoin${dirFlag}' ` +
        'and the new join command the operator gives you',
    );
  }
  if (isTunnelError(err, 'UNAUTHENTICATED')) {
    return new TunnelError(
      'UNAUTHENTICATED',
      `the relay no longer accepts this agent's credential: cluster ${cluster} was deleted on the hub (or joined ` +
        `again from another state dir), so the agent stopped. Run 'tunnel-client unjoin${dirFlag}', ask the hub operator ` +
        `for a new join command ('tunnel-relay cluster create ${cluster}' prints one) and run it`,
    );
  }
  return null;
}

export class Agent {
  readonly #options: AgentOptions;
  readonly #clock: Clock;
  readonly #log: (line: string) => void;
  readonly #random: () => number;
  #state: AgentState;
  #status: ClusterStatus;
  #running = false;
  #pollTimer: TimerHandle | undefined;
  readonly #pollBackoff: Backoff;
  readonly #valuesBackoff: Backoff;
  #valuesTimer: TimerHandle | undefined;
  #lastRefusalCheck = Number.NEGATIVE_INFINITY;
  #lease: LeaseLoop | undefined;
  #facts: FactsSource | undefined;
  /** The collected facts the relay has from the last renewal (JSON), to renew early when they change. */
  #factsSent = '{}';
  readonly #reasonReport = new ReasonReport(() => this.#dataPlane?.stats() ?? DISCONNECTED);
  #dataPlane: DataPlane | undefined;
  readonly #dataPlaneWaiters: Array<(dp: DataPlane) => void> = [];
  #relayValues: Values = {};
  #values: Values;
  #valuesVersion: string | null = null;
  #leaseRenewedAt: string | null = null;
  #failures = 0;
  #lastError: string | null = null;
  #stopped: TunnelError | null = null;
  readonly #stopWaiters: Array<(err: TunnelError) => void> = [];
  readonly #waiters: Waiter[] = [];
  #pendingSince: number | undefined;
  #lastProgressAt: number | undefined;

  constructor(opts: AgentOptions) {
    this.#options = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.log ?? (() => {});
    this.#random = opts.random ?? Math.random;
    this.#state = opts.stateDir.readState();
    this.#status = this.#state.status;
    this.#values = effectiveValues({}, opts.valuesFiles);
    this.#pollBackoff = new Backoff({ random: this.#random });
    this.#valuesBackoff = new Backoff({ random: this.#random });
  }

  get registrationStatus(): ClusterStatus {
    return this.#status;
  }

  get values(): Values {
    return this.#values;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#writeStatus();
    if (this.#status === 'Accepted') this.#onAccepted();
    else {
      this.#pendingSince = this.#clock.now();
      void this.#poll();
    }
  }

  /** Resolves once the registration is Accepted; rejects as whenStopped does when it is denied or deleted. */
  whenAccepted(): Promise<void> {
    if (this.#status === 'Accepted') return Promise.resolve();
    if (this.#stopped) return Promise.reject(this.#stopped);
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
  }

  /**
   * Rejects when the relay ends the registration (denied or deleted: retrying cannot help); the agent
   * has then stopped its loops. Never resolves.
   */
  whenStopped(): Promise<never> {
    const stopped = this.#stopped;
    if (stopped) return Promise.reject(stopped);
    return new Promise<never>((_, reject) => {
      this.#stopWaiters.push(reject);
    });
  }

  /** Resolves once the data plane reports its session up (at once when the agent runs without one). */
  async whenSessionUp(): Promise<void> {
    if (!this.#options.dataPlane) return;
    const dp = this.#dataPlane ?? (await new Promise<DataPlane>((r) => this.#dataPlaneWaiters.push(r)));
    await dp.whenUp?.();
  }

  /** Graceful stop (SIGTERM): drains the data plane (at most `graceMs`), then closes. */
  async stop(graceMs = AGENT_STOP_GRACE_MS): Promise<void> {
    const dp = this.#dataPlane;
    if (this.#running && dp?.drain) {
      this.#log(
        `draining: the hub opens no new streams here; waiting up to ${graceMs / 1000}s for open ones`,
      );
      const left = await dp.drain(graceMs);
      if (left > 0) this.#log(`${left} streams still open after ${graceMs / 1000}s: closing them`);
    }
    await this.close();
  }

  async close(): Promise<void> {
    this.#running = false;
    this.#clock.clearTimer(this.#pollTimer);
    this.#clock.clearTimer(this.#valuesTimer);
    this.#lease?.stop();
    this.#facts?.stop();
    const dp = this.#dataPlane;
    this.#dataPlane = undefined;
    if (dp) await dp.close();
    this.#writeStatus();
  }

  async #poll(): Promise<void> {
    if (!this.#running) return;
    let delay = jittered(PENDING_POLL_MS, 0.1, this.#random);
    try {
      const info = await this.#options.api.info();
      this.#noteSuccess();
      this.#pollBackoff.reset();
      if (info.status === 'Accepted') {
        this.#saveRegistration('Accepted', info.tunnel);
        this.#onAccepted();
        return;
      }
      this.#setStatus(info.status);
      this.#progress();
    } catch (err) {
      const ended = registrationEnded(err, this.#state.cluster, this.#options.stateDir.dir);
      if (ended) {
        void this.#end(ended);
        return;
      }
      delay = this.#pollBackoff.next();
      this.#fail(err, delay);
    }
    if (this.#running) this.#pollTimer = this.#clock.setTimer(delay, () => void this.#poll());
  }

  #progress(): void {
    const now = this.#clock.now();
    const waited = Math.round((now - (this.#pendingSince ?? now)) / 1000);
    const c = this.#state.cluster;
    const line = `cluster ${c} is ${this.#status}: waiting for an administrator to run 'tunnel-relay cluster accept ${c}' (${waited}s)`;
    if (this.#options.progress) {
      this.#options.progress(line);
      return;
    }
    if (this.#lastProgressAt !== undefined && now - this.#lastProgressAt < PROGRESS_EVERY_MS) return;
    this.#lastProgressAt = now;
    this.#log(line);
  }

  #onAccepted(): void {
    this.#setStatus('Accepted');
    this.#log(`cluster ${this.#state.cluster} is Accepted`);
    for (const w of this.#waiters) w.resolve();
    this.#waiters.length = 0;
    // Values are fetched when the first lease answer (sent at once) brings a valuesVersion.
    void this.#startDataPlane();
    this.#lease = new LeaseLoop({
      clock: this.#clock,
      random: this.#options.random,
      earlyStillDue: () => this.#reasonReport.due() || this.#factsDue(),
      renew: async () => {
        const report = this.#reasonReport.body();
        const facts = JSON.stringify(this.#facts?.current() ?? {});
        const res = await this.#options.api.lease({
          claims: withKubeFacts(this.#state.claims, this.#facts?.current() ?? {}),
          agentVersion: this.#state.agentVersion,
          ...report,
        });
        this.#reasonReport.renewed(report, res);
        this.#factsSent = facts;
        return res;
      },
      onRenewed: (res) => {
        this.#onLease(res);
        this.#reportReasonChange();
      },
      onFailed: (err, failures, retryInMs) => {
        const ended = registrationEnded(err, this.#state.cluster, this.#options.stateDir.dir);
        if (ended) {
          void this.#end(ended);
          return;
        }
        this.#failures = failures - 1;
        this.#fail(err, retryInMs);
      },
    });
    this.#lease.start();
    this.#facts = this.#options.clusterFacts?.(() => {
      if (this.#factsDue()) this.#lease?.renewNow();
    });
    this.#facts?.start();
  }

  #factsDue(): boolean {
    return JSON.stringify(this.#facts?.current() ?? {}) !== this.#factsSent;
  }

  #onLease(res: LeaseReply): void {
    this.#leaseRenewedAt = new Date(this.#clock.wallNow()).toISOString();
    this.#dataPlane?.relayAnswered?.();
    if (this.#status !== 'Accepted') this.#saveRegistration('Accepted', this.#state.tunnel);
    this.#noteSuccess();
    if (res.valuesVersion !== this.#valuesVersion) {
      this.#valuesVersion = res.valuesVersion;
      void this.#refreshValues();
    } else {
      this.#writeStatus();
    }
  }

  /** The relayed reason the relay has is not the current one: renew early (lease-loop.ts bounds how often). */
  #reportReasonChange(): void {
    if (this.#reasonReport.due()) this.#lease?.renewNow();
  }

  async #refreshValues(): Promise<void> {
    this.#clock.clearTimer(this.#valuesTimer);
    this.#valuesTimer = undefined;
    try {
      this.#relayValues = await this.#options.api.values(this.#state.cluster);
      if (!this.#running) return;
      this.#values = effectiveValues(this.#relayValues, this.#options.valuesFiles);
      this.#dataPlane?.applyValues?.(this.#values);
      this.#valuesBackoff.reset();
      this.#writeStatus();
    } catch (err) {
      if (!this.#running) return;
      // Keep the last good values and try again with backoff (a newer lease version also retries).
      const delay = this.#valuesBackoff.next();
      this.#lastError = `values: ${describe(err)}`;
      this.#log(`${this.#lastError}; retrying in ${(delay / 1000).toFixed(1)}s`);
      this.#writeStatus();
      this.#valuesTimer = this.#clock.setTimer(delay, () => void this.#refreshValues());
    }
  }

  async #startDataPlane(): Promise<void> {
    const factory = this.#options.dataPlane;
    const tunnel = this.#state.tunnel;
    if (!factory || !tunnel || this.#dataPlane) return;
    try {
      this.#dataPlane = await factory({
        state: this.#state,
        tunnel,
        privateKey: this.#options.stateDir.readPrivateKey(),
        proxy: this.#options.proxy,
        onChange: () => {
          if (!this.#running) return;
          this.#writeStatus();
          this.#reportReasonChange();
        },
        onRelayRefused: () => void this.#checkRegistration(),
      });
      this.#dataPlane.applyValues?.(this.#values);
      for (const w of this.#dataPlaneWaiters.splice(0)) w(this.#dataPlane);
    } catch (err) {
      this.#lastError = describe(err);
      this.#log(`data plane failed to start: ${this.#lastError}`);
    }
    this.#writeStatus();
  }

  /**
   * Asks the relay whether the registration still stands (the relay refused the relay connection): ends the agent
   * when the cluster was deleted or denied; anything else leaves the loops to carry on. At most once per
   * REFUSAL_CHECK_GAP_MS.
   */
  async #checkRegistration(): Promise<void> {
    const now = this.#clock.now();
    if (!this.#running || now - this.#lastRefusalCheck < REFUSAL_CHECK_GAP_MS) return;
    this.#lastRefusalCheck = now;
    let err: unknown = null;
    try {
      const info = await this.#options.api.info();
      if (info.status === 'Denied') err = new TunnelError('CLUSTER_DENIED', 'the cluster is Denied');
    } catch (e) {
      err = e;
    }
    const ended = this.#running
      ? registrationEnded(err, this.#state.cluster, this.#options.stateDir.dir)
      : null;
    if (ended) await this.#end(ended);
  }

  /** The relay ended the registration: stop every loop, keep the reason in status.json, tell the waiters. */
  async #end(reason: TunnelError): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = reason;
    this.#lastError = describe(reason);
    this.#log(this.#lastError);
    if (reason.code === 'CLUSTER_DENIED') this.#saveRegistration('Denied', this.#state.tunnel);
    await this.close();
    for (const w of this.#waiters.splice(0)) w.reject(reason);
    for (const w of this.#stopWaiters.splice(0)) w(reason);
  }

  #saveRegistration(status: ClusterStatus, tunnel: Tunnel | null): void {
    this.#state = { ...this.#state, status, tunnel: tunnel ?? this.#state.tunnel };
    this.#options.stateDir.saveState(this.#state);
    this.#setStatus(status);
  }

  #setStatus(status: ClusterStatus): void {
    const changed = status !== this.#status;
    this.#status = status;
    if (changed) {
      this.#log(`cluster ${this.#state.cluster} is now ${status}`);
      this.#writeStatus();
    }
  }

  #noteSuccess(): void {
    if (this.#failures > 0) this.#log(`the relay answers again after ${this.#failures} failed attempts`);
    this.#failures = 0;
    this.#lastError = null;
  }

  /**
   * One line for the first failure of a streak, none for the retries that follow (status.json keeps the last
   * error); #noteSuccess logs the end of the streak.
   */
  #fail(err: unknown, retryInMs: number): void {
    this.#failures++;
    this.#lastError = describe(err);
    if (this.#failures === 1) {
      this.#log(
        `${this.#lastError}; retrying in ${(retryInMs / 1000).toFixed(1)}s, then with backoff (at most ` +
          `${BACKOFF_CAP_MS / 1000}s apart)`,
      );
    }
    this.#writeStatus();
  }

  statusFile(): AgentStatusFile {
    const conn = this.#dataPlane?.stats() ?? DISCONNECTED;
    return {
      pid: process.pid,
      updatedAt: new Date(this.#clock.wallNow()).toISOString(),
      cluster: this.#state.cluster,
      status: this.#status,
      ...conn,
      leaseRenewedAt: this.#leaseRenewedAt,
      failures: this.#failures,
      lastError: this.#lastError,
      stopped: this.#stopped ? describe(this.#stopped) : null,
      valuesVersion: this.#valuesVersion,
      values: this.#values,
    };
  }

  #writeStatus(): void {
    try {
      this.#options.stateDir.writeStatus(this.statusFile());
    } catch (err) {
      this.#log(`cannot write status file: ${describe(err)}`);
    }
  }
}

function describe(err: unknown): string {
  if (isTunnelError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
