/** `tunnel-client run`: the agent from saved state, until SIGINT/SIGTERM. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { untilSignal } from '../../shared/cli/signals.js';
import { RelayClient } from '../../shared/http/client.js';
import { trustFromFlags } from '../../shared/http/trust.js';
import { describeProxy, parseProxyUrl, targetOf } from '../../shared/proxy/proxy-config.js';
import { relayConnectVia } from '../../shared/proxy/transports.js';
import { readValuesFiles } from '../../shared/values/values-file.js';
import { defaultAead } from '../../shared/wireguard/crypto/aead.js';
import { Agent } from '../agent/agent.js';
import { AgentApi } from '../agent/api.js';
import { settingsFromState } from '../egress/agent-proxy.js';
import {
  endProgress,
  type LogFormat,
  logFormatOption,
  openStateDir,
  stateDirOption,
  stderrLog,
  terminalProgress,
  useLogFormat,
} from './context.js';
import type { ClientProgramOptions } from './program.js';
import { checkStunServersWithEgress, stunServerOption } from './stun-server-option.js';

interface RunFlags {
  stateDir?: string;
  proxy?: string;
  proxyCaFile?: string;
  stunServer?: string[];
  logFormat?: LogFormat;
}

export function runCommand(opts: ClientProgramOptions = {}): Command {
  return new Command('run')
    .description('run the agent from its saved state (after join)')
    .addOption(stateDirOption())
    .option(
      '--proxy <url>',
      'HTTP CONNECT proxy for every relay connection (overrides HTTPS_PROXY; saved in the state dir)',
      (v: string) => parseProxyUrl(v, '--proxy').href,
    )
    .option('--proxy-ca-file <file>', 'PEM CA certificate(s) of an https:// proxy (saved)')
    .addOption(stunServerOption())
    .addOption(logFormatOption())
    .action(async (flags: RunFlags) => {
      useLogFormat(flags.logFormat);
      // Bad settings stop here (BAD_CONFIG), not later in the session loop.
      const cipher = defaultAead().name;
      opts.dataPlane?.check?.();
      const stateDir = openStateDir(flags.stateDir);
      let state = stateDir.readState();
      const valuesFiles = readValuesFiles(state.valuesFiles);
      if (flags.proxy) state = { ...state, proxy: flags.proxy };
      if (flags.proxyCaFile) state = { ...state, proxyCaFile: resolve(flags.proxyCaFile) };
      if (flags.stunServer) state = { ...state, stunServers: flags.stunServer };
      checkStunServersWithEgress(state.stunServers ?? [], state.egress);
      const proxy = settingsFromState(stateDir, state);
      const connectVia = relayConnectVia(proxy, new URL(state.relay).protocol);
      const client = new RelayClient({
        baseUrl: state.relay,
        trust: trustFromFlags({ caPin: state.caPin ?? undefined, caFile: state.caFile ?? undefined }),
        connectVia,
      });
      const api = new AgentApi(client, stateDir.readCredential());
      if (proxy.https || proxy.http) stderrLog(`relay ${describeProxy(proxy, targetOf(state.relay))}`);
      let unlock: () => void;
      try {
        unlock = stateDir.lock();
        if (flags.proxy || flags.proxyCaFile || flags.stunServer) stateDir.saveState(state);
      } catch (err) {
        await client.close();
        throw err;
      }
      const agent = new Agent({
        stateDir,
        api,
        valuesFiles,
        log: stderrLog,
        progress: terminalProgress(),
        proxy,
        dataPlane: opts.dataPlane,
      });
      try {
        stderrLog(
          `running cluster ${state.cluster} against ${state.relay} (${state.status}); WireGuard cipher ${cipher}`,
        );
        agent.start();
        // A denied or deleted cluster ends the run (exit 1, the error says what to do); a signal exits 0.
        const sig = await Promise.race([untilSignal(), agent.whenStopped()]);
        stderrLog(`${sig}: stopping`);
      } finally {
        endProgress();
        await agent.close();
        await client.close();
        unlock();
      }
    });
}
