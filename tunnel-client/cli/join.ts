/**
 * `tunnel-client join`: register with a bootstrap PSK (or an org-wide bootstrap token), save the state
 * dir, then keep running (or, with --wait, return once the cluster is Accepted).
 */
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { checkBootstrapSecret } from '../../shared/kit/bootstrap-secret.js';
import { allowOption } from '../../shared/kit/cli/allow-option.js';
import { choiceOption } from '../../shared/kit/cli/choice-option.js';
import { type OutputFormat, outputOption, streamPrinter } from '../../shared/kit/cli/output.js';
import {
  collect,
  collectClaims,
  parseClusterName,
  parseHttpUrl,
  parseRelayUrl,
} from '../../shared/kit/cli/parsers.js';
import { shellQuote } from '../../shared/kit/cli/shell-quote.js';
import { keepAlive } from '../../shared/kit/cli/signals.js';
import { packageVersion } from '../../shared/kit/cli/version.js';
// The relay's duration grammar (30m, 24h, 1h30m); a candidate for shared/ when someone owns it.
import { parseDuration } from '../../shared/kit/duration.js';
import type { Trust } from '../../shared/kit/http/dispatcher.js';
import { trustFromFlags } from '../../shared/kit/http/trust.js';
import { parseProxyUrl } from '../../shared/kit/proxy/proxy-config.js';
import type { Values } from '../../shared/kit/values/deep-merge.js';
import { readValuesFiles } from '../../shared/kit/values/values-file.js';
import { parseCaPin } from '../../shared/tls-pin.js';
import type { Agent, DataPlaneFactory } from '../agent/agent.js';
import { AgentApi } from '../agent/api.js';
import { register } from '../agent/registration.js';
import type { StateDir } from '../agent/state-dir.js';
import type { AgentState } from '../agent/types.js';
import { inClusterApi } from '../dialer/in-cluster.js';
import { agentProxySettings } from '../egress/agent-proxy.js';
import { type AgentRun, closeAgentRun, newAgent, relayClientVia, untilSignalOrStopped } from './agent-run.js';
import {
  type AgentCommandFlags,
  logFormatOption,
  openStateDir,
  stateDirOption,
  stderrLog,
  useLogFormat,
} from './context.js';
import type { ClientProgramOptions } from './program.js';
import { checkStunServersWithEgress, stunServerOption } from './stun-server-option.js';
import { transportText } from './transport-text.js';

interface JoinFlags extends AgentCommandFlags {
  relay: string;
  cluster: string;
  psk?: string;
  caPin?: string;
  caFile?: string;
  upstream?: string;
  allow?: string[];
  egress: '443-only' | 'auto';
  stunServer?: string[];
  proxy?: string;
  proxyCaFile?: string;
  claim?: string[];
  values?: string[];
  wait?: boolean;
  waitTimeout?: string;
  output: OutputFormat;
}

export function joinCommand(opts: ClientProgramOptions = {}): Command {
  return new Command('join')
    .description('register this agent with a relay and keep it connected')
    .requiredOption('--relay <url>', 'relay URL, https://HOST[:PORT]', (v: string) => parseRelayUrl(v))
    .requiredOption('--cluster <name>', 'cluster name (DNS-1123 label)', (v: string) =>
      parseClusterName(v, '--cluster'),
    )
    .addOption(
      new Option('--psk <psk>', 'bootstrap PSK from the join command, or an org-wide bootstrap token').env(
        'TUNNEL_CLIENT_PSK',
      ),
    )
    .option(
      '--ca-pin <pin>',
      "sha256:<hex> of the relay's certificate (from the join command)",
      (v: string) => parseCaPin(v),
    )
    .option('--ca-file <file>', 'PEM CA certificate(s) to verify the relay with, instead of a pin')
    .addOption(stateDirOption())
    .option(
      '--upstream <url>',
      'default upstream the hub may reach (e.g. https://kubernetes.default:443)',
      (v: string) => parseHttpUrl(v, '--upstream'),
    )
    .addOption(allowOption())
    .addOption(choiceOption('--egress <mode>', 'outbound mode', ['443-only', 'auto']).default('auto'))
    .addOption(stunServerOption())
    .option(
      '--proxy <url>',
      'HTTP CONNECT proxy for every relay connection, http(s)://[user:pass@]host:port (overrides HTTPS_PROXY; saved)',
      (v: string) => parseProxyUrl(v, '--proxy').href,
    )
    .option('--proxy-ca-file <file>', 'PEM CA certificate(s) of an https:// proxy (saved)')
    .option('--claim <key=value>', 'a claim reported to the relay (repeatable)', collect)
    .option('--values <file>', 'YAML values layered over the relay values, in order (repeatable)', collect)
    .option('--wait', 'return once the cluster is Accepted (exit 0), or fail with the reason')
    .option(
      '--wait-timeout <duration>',
      'with --wait: give up after this long (e.g. 5m; default: wait forever)',
    )
    .addOption(outputOption())
    .addOption(logFormatOption())
    .addHelpText(
      'after',
      `
Examples:
  # the command printed by 'tunnel-relay cluster create' (Accepted at once; the PSK in the environment)
  TUNNEL_CLIENT_PSK=tpsk_... tunnel-client join --relay https://relay.example:8443 --cluster edge-1 \\
    --ca-pin sha256:... --upstream https://127.0.0.1:6443
  # an org-wide bootstrap token: Pending until 'tunnel-relay cluster accept edge-2'
  TUNNEL_CLIENT_PSK=trk_... tunnel-client join --relay https://relay.example:8443 --cluster edge-2 \\
    --ca-pin sha256:... --claim region=eu --values ./local.yaml --wait`,
    )
    .action(async (flags: JoinFlags) => {
      useLogFormat(flags.logFormat);
      await join(flags, await opts.loadDataPlane?.());
    });
}

/**
 * The upstream the hub's requests go to: `--upstream`, else in a pod the pod's API server (in-cluster.ts), else none;
 * with the line to print once registered (which in-cluster server, or a warning that hub requests will be refused).
 */
function defaultUpstream(
  flag: string | undefined,
  cluster: string,
  env: NodeJS.ProcessEnv,
): { upstream: string | null; note: string | null } {
  if (flag !== undefined) return { upstream: flag, note: null };
  const inCluster = inClusterApi(env);
  if (inCluster !== null) {
    return {
      upstream: inCluster.url,
      note:
        `no --upstream: using this pod's Kubernetes API server ${inCluster.url} (KUBERNETES_SERVICE_HOST/PORT), ` +
        `trusting ${inCluster.caFile}; hub requests carry the service-account token ${inCluster.tokenFile}`,
    };
  }
  return {
    upstream: null,
    note:
      `warning: no --upstream and not in a Kubernetes pod: the hub can reach nothing through this agent, so every ` +
      `request to cluster ${cluster} through the relay (kubectl, curl) will be refused (STREAM_REFUSED). To serve an ` +
      'API, join with --upstream set to its URL, e.g. --upstream https://127.0.0.1:6443 (the hub operator can print ' +
      'such a join command with --upstream on cluster create or cluster rotate-psk)',
  };
}

/** The join flags, checked before the single-use PSK is spent or anything is written. */
interface CheckedJoin {
  cipher: string;
  psk: string;
  waitTimeoutMs: number | undefined;
  claims: Record<string, string>;
  valuesFiles: string[];
  fileValues: Values[];
  caFile: string | undefined;
  trust: Trust;
}

function checkJoinFlags(flags: JoinFlags, dataPlane: DataPlaneFactory | undefined): CheckedJoin {
  // Bad settings stop here (BAD_CONFIG), before the single-use PSK is spent, not later in the session loop.
  const cipher = transportText(flags.egress);
  dataPlane?.check?.();
  if (!flags.psk) {
    throw new TunnelError(
      'BAD_INPUT',
      'missing --psk: give the PSK from the join command (or set TUNNEL_CLIENT_PSK)',
    );
  }
  const waitTimeoutMs =
    flags.waitTimeout === undefined ? undefined : parseDuration(flags.waitTimeout, '--wait-timeout');
  if (waitTimeoutMs !== undefined && !flags.wait) {
    throw new TunnelError('BAD_INPUT', '--wait-timeout only applies together with --wait');
  }
  checkStunServersWithEgress(flags.stunServer ?? [], flags.egress);
  const claims = collectClaims(flags.claim ?? []);
  const valuesFiles = (flags.values ?? []).map((p) => resolve(p));
  const fileValues = readValuesFiles(valuesFiles);
  const caFile = flags.caFile ? resolve(flags.caFile) : undefined;
  const trust = trustFromFlags({ caPin: flags.caPin, caFile });
  // A mistyped PSK fails here, before a request that would count against this source's limit.
  const psk = checkBootstrapSecret(flags.psk, '--psk');
  return { cipher, psk, waitTimeoutMs, claims, valuesFiles, fileValues, caFile, trust };
}

interface RegisterInputs {
  flags: JoinFlags;
  checked: CheckedJoin;
  stateDir: StateDir;
  api: AgentApi;
  upstream: string | null;
  proxyCaFile: string | undefined;
}

/** Registers with the bootstrap PSK, saves the state with this agent's egress settings, then takes its lock. */
async function registerAndLock(inputs: RegisterInputs): Promise<{ state: AgentState; unlock: () => void }> {
  const { flags, checked, stateDir } = inputs;
  const registered = await register(stateDir, inputs.api, checked.psk, {
    relay: flags.relay,
    cluster: flags.cluster,
    caPin: flags.caPin ?? null,
    caFile: checked.caFile ?? null,
    agentVersion: packageVersion(),
    upstream: inputs.upstream,
    allow: flags.allow ?? [],
    claims: checked.claims,
    valuesFiles: checked.valuesFiles,
  });
  const state = {
    ...registered,
    proxy: flags.proxy ?? null,
    proxyCaFile: inputs.proxyCaFile ?? null,
    egress: flags.egress,
    stunServers: flags.stunServer ?? [],
  };
  stateDir.saveState(state);
  return { state, unlock: stateDir.lock() };
}

interface WaitLimit {
  cluster: string;
  stateDir: string;
  /** --wait-timeout in ms, and as given (for the error); undefined: wait forever. */
  timeoutMs: number | undefined;
  timeoutText: string | undefined;
}

/** `--wait`: until the cluster is Accepted and its WireGuard session up (handshake done, the hub answered a probe). */
async function waitUntilUp(agent: Agent, limit: WaitLimit): Promise<void> {
  const release = keepAlive();
  let timer: NodeJS.Timeout | undefined;
  try {
    const up = Promise.race([agent.whenAccepted().then(() => agent.whenSessionUp()), agent.whenStopped()]);
    const timeoutMs = limit.timeoutMs;
    if (timeoutMs === undefined) await up;
    else {
      await Promise.race([
        up,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(waitTimedOut(agent, limit)), timeoutMs);
        }),
      ]);
    }
  } finally {
    clearTimeout(timer);
    release();
  }
}

function waitTimedOut(agent: Agent, limit: WaitLimit): TunnelError {
  const { cluster, stateDir } = limit;
  const where =
    agent.registrationStatus === 'Accepted'
      ? 'is Accepted but its tunnel is not up'
      : `is still ${agent.registrationStatus}`;
  return new TunnelError(
    'TIMEOUT',
    `cluster ${cluster} ${where} after --wait-timeout ${limit.timeoutText}; the registration is saved in ${stateDir}: after 'tunnel-relay cluster accept ${cluster}', run 'tunnel-client run --state-dir ${shellQuote(stateDir)}'`,
  );
}

function printAccepted(output: OutputFormat, cluster: string, stateDir: string): void {
  const out = streamPrinter();
  if (output === 'json') out.json({ cluster, status: 'Accepted', stateDir });
  else
    out.line(
      `cluster ${cluster} is Accepted and its tunnel is up; run 'tunnel-client run --state-dir ${shellQuote(stateDir)}' to keep it connected`,
    );
}

async function join(flags: JoinFlags, dataPlane: DataPlaneFactory | undefined): Promise<void> {
  const checked = checkJoinFlags(flags, dataPlane);
  const stateDir = openStateDir(flags.stateDir);
  const { upstream, note: upstreamNote } = defaultUpstream(flags.upstream, flags.cluster, process.env);
  const proxyCaFile = flags.proxyCaFile ? resolve(flags.proxyCaFile) : undefined;
  const proxy = agentProxySettings({ proxy: flags.proxy, proxyCaFile });
  const run: AgentRun = { client: relayClientVia(flags.relay, checked.trust, proxy) };
  try {
    const bootstrapApi = new AgentApi(run.client);
    const { state, unlock } = await registerAndLock({
      flags,
      checked,
      stateDir,
      api: bootstrapApi,
      upstream,
      proxyCaFile,
    });
    run.unlock = unlock;
    stderrLog(
      `registered cluster ${state.cluster} with ${state.relay}: ${state.status}; state in ${stateDir.dir}; ` +
        `WireGuard cipher ${checked.cipher}`,
    );
    if (upstreamNote !== null) stderrLog(upstreamNote);
    const agent = newAgent({
      stateDir,
      api: bootstrapApi.withCredential(stateDir.readCredential()),
      valuesFiles: checked.fileValues,
      proxy,
      dataPlane,
    });
    run.agent = agent;
    agent.start();
    if (flags.wait) {
      const dir = stateDir.dir;
      await waitUntilUp(agent, {
        cluster: state.cluster,
        stateDir: dir,
        timeoutMs: checked.waitTimeoutMs,
        timeoutText: flags.waitTimeout,
      });
      printAccepted(flags.output, state.cluster, dir);
    } else await untilSignalOrStopped(agent);
  } finally {
    await closeAgentRun(run);
  }
}
