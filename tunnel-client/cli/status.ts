/**
 * `tunnel-client status`: the saved registration plus what the running agent last wrote to status.json.
 * `--refresh` also asks the relay for the registration status.
 */

import { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import type { ClusterStatus } from '../../shared/api/cluster-status.js';
import { isTunnelError } from '../../shared/errors.js';
import { type OutputFormat, outputOption, streamPrinter } from '../../shared/kit/cli/output.js';
import { formatRtt } from '../../shared/kit/rtt-text.js';
import { relayedReasonText } from '../../shared/net/tunnel-endpoint/relayed-reasons.js';
import { registrationEnded } from '../agent/agent.js';
import { processAlive, type StateDir } from '../agent/state-dir.js';
import { type AgentState, type AgentStatusFile, DISCONNECTED, type PathDetail } from '../agent/types.js';
import { apiFromState, openStateDir, stateDirOption } from './context.js';

export interface StatusReport {
  readonly cluster: string;
  readonly status: ClusterStatus;
  readonly connected: boolean;
  readonly path: 'direct' | 'relayed' | 'none';
  /** The direct path's details (remote, RTT per path, last switch, why relayed); null when not reported. */
  readonly pathDetail: PathDetail | null;
  readonly rttMs: number | null;
  readonly lastHandshake: string | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly values: Record<string, unknown>;
  readonly relay: string;
  readonly stateDir: string;
  /** Whether an agent process is running from this state dir. */
  readonly agentRunning: boolean;
  readonly leaseRenewedAt: string | null;
  readonly failures: number;
  readonly lastError: string | null;
  /** Why the agent stopped for good (cluster denied or deleted) and what to run; null otherwise. */
  readonly stopped: string | null;
  /** Why the running agent's relay connection is down, reported by its data plane at once; else null. */
  readonly relayError: string | null;
  /** `--refresh` could not ask the relay: `CODE: message` (the rest is the local view); else null. */
  readonly refreshError: string | null;
  readonly updatedAt: string | null;
}

export function buildReport(
  stateDir: StateDir,
  state: AgentState,
  file: AgentStatusFile | undefined,
): StatusReport {
  const running = file !== undefined && file.pid !== process.pid && processAlive(file.pid);
  const conn = running && file ? file : DISCONNECTED;
  return {
    cluster: state.cluster,
    status: file && running ? file.status : state.status,
    connected: conn.connected,
    path: conn.path,
    pathDetail: conn.pathDetail ?? null,
    rttMs: conn.rttMs,
    lastHandshake: conn.lastHandshake,
    bytesIn: conn.bytesIn,
    bytesOut: conn.bytesOut,
    values: file?.values ?? {},
    relay: state.relay,
    stateDir: stateDir.dir,
    agentRunning: running,
    leaseRenewedAt: file?.leaseRenewedAt ?? null,
    failures: running && file ? file.failures : 0,
    lastError: running && file ? file.lastError : null,
    stopped: file?.stopped ?? null,
    relayError: running && file ? (file.relayError ?? null) : null,
    refreshError: null,
    updatedAt: file?.updatedAt ?? null,
  };
}

const ms = (v: number | null) => (v === null ? '-' : formatRtt(v));

/** The path selector's view, one entry per line (nothing when the agent did not report one). */
function pathLines(d: PathDetail | null): string[] {
  if (!d) return [];
  return [
    `direct remote:  ${d.remote ?? '-'}`,
    `path rtt:       direct ${ms(d.rttDirectMs)}, relayed ${ms(d.rttRelayedMs)}`,
    `path switched:  ${d.lastSwitch ?? '-'}`,
    `nat mapping:    ${d.nat ?? '-'}`,
    `path mtu:       ${d.mtu ?? '-'}`,
    ...(d.reason ? [`relayed why:    ${relayedReasonText(d.reason)}`] : []),
  ];
}

/**
 * The report with the relay's view of the registration. When the relay cannot be asked, the local view
 * with `refreshError` (exit code 1); a denied or deleted cluster fills `stopped` with what to run.
 */
async function refreshed(report: StatusReport, stateDir: StateDir, state: AgentState): Promise<StatusReport> {
  const { client, api } = apiFromState(stateDir, state);
  try {
    const info = await api.info();
    return { ...report, status: info.status };
  } catch (err) {
    const ended = registrationEnded(err, state.cluster, stateDir.dir);
    if (ended) {
      const status = ended.code === 'CLUSTER_DENIED' ? 'Denied' : report.status;
      return { ...report, status, stopped: `${ended.code}: ${ended.message}` };
    }
    if (!isTunnelError(err)) throw err;
    process.exitCode = 1;
    return { ...report, refreshError: `${err.code}: ${err.message}` };
  } finally {
    await client.close();
  }
}

/** The text form of the report, one entry per line (RTTs rounded: `2.58 ms`, `12 ms`). */
export function statusLines(report: StatusReport): string[] {
  return [
    `cluster:        ${report.cluster}`,
    `relay:          ${report.relay}`,
    `status:         ${report.status}`,
    `agent running:  ${report.agentRunning ? 'yes' : 'no'}`,
    `connected:      ${report.connected ? 'yes' : 'no'} (path ${report.path})`,
    ...pathLines(report.pathDetail),
    `rtt:            ${ms(report.rttMs)}`,
    `last handshake: ${report.lastHandshake ?? '-'}`,
    `bytes in/out:   ${report.bytesIn} / ${report.bytesOut}`,
    `lease renewed:  ${report.leaseRenewedAt ?? '-'}`,
    ...(report.lastError ? [`last error:     ${report.lastError} (${report.failures} failures)`] : []),
    ...(report.relayError ? [`relay error:    ${report.relayError}`] : []),
    ...(report.refreshError ? [`refresh error:  ${report.refreshError}`] : []),
    ...(report.stopped ? [`stopped:        ${report.stopped}`] : []),
  ];
}

export function statusCommand(): Command {
  return new Command('status')
    .description('show the registration, the connection and the effective values')
    .addOption(stateDirOption())
    .option('--refresh', 'also ask the relay for the registration status')
    .addOption(outputOption())
    .action(async (flags: { stateDir?: string; refresh?: boolean; output: OutputFormat }) => {
      const stateDir = openStateDir(flags.stateDir);
      const state = stateDir.readState();
      let report: StatusReport = buildReport(stateDir, state, stateDir.readStatus());
      if (flags.refresh) report = await refreshed(report, stateDir, state);
      const out = streamPrinter();
      if (flags.output === 'json') {
        out.json(report);
        return;
      }
      // One entry per line: a line feed inside a value (an error message from the relay) cannot fake a line.
      out.lines(statusLines(report));
      const yaml = toYaml(report.values).trimEnd();
      out.line(`values:${yaml === '{}' ? ' {}' : `\n${yaml.replace(/^/gm, '  ')}`}`);
    });
}
