/**
 * The agent's proxy settings from what it has at start: `--proxy` / `--proxy-ca-file` (join flags, or
 * the ones saved in state.json), the environment, and the relay's agent values from the last run
 * (status.json). Values fetched while running apply from the next start: the proxy may be what it
 * takes to fetch them.
 */
import { readFileSync } from 'node:fs';
import { TunnelError } from '../../shared/errors.js';
import {
  type ProxySettings,
  type ProxyValues,
  resolveProxySettings,
} from '../../shared/kit/proxy/proxy-config.js';
import type { StateDir } from '../agent/state-dir.js';
import type { AgentState } from '../agent/types.js';

export interface AgentProxyFlags {
  readonly proxy?: string | null | undefined;
  readonly proxyCaFile?: string | null | undefined;
}

/** Reads `--proxy-ca-file` (PEM). */
export function readProxyCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'unreadable';
    throw new TunnelError('BAD_INPUT', `--proxy-ca-file '${file}' cannot be read (${code})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new TunnelError('BAD_INPUT', `--proxy-ca-file '${file}' holds no PEM certificate`);
  }
  return pem;
}

export function agentProxySettings(
  flags: AgentProxyFlags,
  env: NodeJS.ProcessEnv = process.env,
  values?: ProxyValues,
): ProxySettings {
  return resolveProxySettings({
    flag: flags.proxy ?? undefined,
    flagCa: flags.proxyCaFile ? readProxyCa(flags.proxyCaFile) : undefined,
    env,
    values,
  });
}

/** The relay's agent values the last run saw (status.json), for the lowest precedence layer. */
export function lastRelayValues(stateDir: StateDir): ProxyValues | undefined {
  const values = stateDir.readStatus()?.values;
  return values && typeof values === 'object' ? (values as ProxyValues) : undefined;
}

/** Settings for an agent running from saved state. */
export function settingsFromState(
  stateDir: StateDir,
  state: AgentState,
  env: NodeJS.ProcessEnv = process.env,
  override: AgentProxyFlags = {},
): ProxySettings {
  return agentProxySettings(
    {
      proxy: override.proxy ?? state.proxy ?? null,
      proxyCaFile: override.proxyCaFile ?? state.proxyCaFile ?? null,
    },
    env,
    lastRelayValues(stateDir),
  );
}
