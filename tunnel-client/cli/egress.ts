/**
 * `tunnel-client egress [--check] [--relay URL] [--state-dir DIR] [--proxy URL] [--egress 443-only|auto]
 * [--output json]`: every destination the agent uses with its current settings (saved state, flags,
 * environment), and with --check whether each one works from here (exit 1 when a TCP one fails; only UDP rows
 * failing is `relay only`, exit 0: egress-check-run.ts).
 */

import { resolve } from 'node:path';
import { Command } from 'commander';
import { checkedBody } from '../../shared/api/checked-body.js';
import { RelayNetwork } from '../../shared/api/network.js';
import { TunnelError } from '../../shared/errors.js';
import { choiceOption } from '../../shared/kit/cli/choice-option.js';
import { type OutputFormat, outputOption, streamPrinter, table } from '../../shared/kit/cli/output.js';
import { parseRelayUrl } from '../../shared/kit/cli/parsers.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import { trustFromFlags } from '../../shared/kit/http/trust.js';
import { type ProxySettings, parseProxyUrl } from '../../shared/kit/proxy/proxy-config.js';
import { relayConnectVia } from '../../shared/kit/proxy/transports.js';
import { parseCaPin } from '../../shared/tls-pin.js';
import type { AgentState } from '../agent/types.js';
import { agentProxySettings, settingsFromState } from '../egress/agent-proxy.js';
import type { CheckResult } from '../egress/check.js';
import { type Destination, type EgressMode, listDestinations } from '../egress/destinations.js';
import { type FirewallRule, firewallRules } from '../egress/firewall-rules.js';
import { openStateDir, stateDirOption } from './context.js';
import { checkAll, verdictLine, verdictOf } from './egress-check-run.js';

interface EgressFlags {
  check?: boolean;
  relay?: string;
  stateDir?: string;
  proxy?: string;
  proxyCaFile?: string;
  egress?: EgressMode;
  caPin?: string;
  caFile?: string;
  output: OutputFormat;
}

/** One line of `egress --output json`. */
export interface EgressLine {
  host: string;
  port: number;
  protocol: 'tcp' | 'udp';
  purpose: string;
  viaProxy: boolean;
  check?: 'ok' | 'failed';
  reason?: string;
  /** STUN lines: this host's address and port as the relay saw them. */
  mapped?: string;
}

export function egressCommand(): Command {
  return new Command('egress')
    .description('list every outbound destination of the agent (host, port, protocol, purpose, proxy)')
    .option(
      '--check',
      'try each destination as the agent would (through the proxy), exit 1 if a TCP one fails (UDP only: relay only, exit 0)',
    )
    .option('--relay <url>', 'relay URL (default: the one in the state dir)', (v: string) => parseRelayUrl(v))
    .addOption(stateDirOption())
    .option(
      '--proxy <url>',
      'HTTP CONNECT proxy (overrides the saved one and HTTPS_PROXY)',
      (v: string) => parseProxyUrl(v, '--proxy').href,
    )
    .option('--proxy-ca-file <file>', 'PEM CA certificate(s) of an https:// proxy')
    .addOption(
      choiceOption<EgressMode>('--egress <mode>', 'outbound mode (default: the saved one, else auto)', [
        '443-only',
        'auto',
      ]),
    )
    .option(
      '--ca-pin <pin>',
      "sha256:<hex> of the relay's certificate (default: the saved one)",
      (v: string) => parseCaPin(v),
    )
    .option('--ca-file <file>', 'PEM CA certificate(s) to verify the relay with')
    .addOption(outputOption())
    .addHelpText(
      'after',
      `
Examples:
  tunnel-client egress                       # what the joined agent connects to
  tunnel-client egress --check --output json # probe each one, exit 1 if any fails
  HTTPS_PROXY=http://proxy.corp:3128 tunnel-client egress --relay https://relay.example --egress 443-only`,
    )
    .action(async (flags: EgressFlags) => egress(flags));
}

async function egress(flags: EgressFlags): Promise<void> {
  const stateDir = openStateDir(flags.stateDir);
  const state: AgentState | undefined = stateDir.hasRegistration() ? stateDir.readState() : undefined;
  const relay = flags.relay ?? state?.relay;
  if (!relay) {
    throw new TunnelError(
      'BAD_INPUT',
      `no relay: pass --relay https://HOST[:PORT], or --state-dir of a joined agent (${stateDir.dir} holds no registration)`,
    );
  }
  const sameRelay = state !== undefined && state.relay === relay;
  const proxyCaFile = flags.proxyCaFile ? resolve(flags.proxyCaFile) : undefined;
  const override = { proxy: flags.proxy, proxyCaFile };
  const proxy = state
    ? settingsFromState(stateDir, state, process.env, override)
    : agentProxySettings(override);
  const useSaved = sameRelay && !flags.caPin && !flags.caFile;
  const trust = trustFromFlags(
    useSaved
      ? { caPin: state?.caPin ?? undefined, caFile: state?.caFile ?? undefined }
      : { caPin: flags.caPin, caFile: flags.caFile ? resolve(flags.caFile) : undefined },
  );
  const tunnel = sameRelay ? state?.tunnel : null;
  const mode: EgressMode = flags.egress ?? state?.egress ?? 'auto';
  // The relay's own answer, so the list is the same before joining as after; the saved registration otherwise.
  // With 443-only no UDP row is listed, so there is nothing to ask.
  const live = mode === 'auto' ? await relayNetwork(relay, trust, proxy) : null;
  const endpoints = live ?? tunnel ?? null;
  if (endpoints === null && mode === 'auto') {
    streamPrinter().note(
      'The relay could not be asked which UDP ports it serves, so the UDP rows (STUN, direct WireGuard) are not ' +
        'listed; join first, or check that the relay URL answers.',
    );
  }
  const destinations = listDestinations({
    relayUrl: relay,
    derpUrl: endpoints?.derpUrl,
    udpEndpoint: endpoints?.udpEndpoint,
    stunEndpoint: endpoints?.stunEndpoint,
    stunServers: sameRelay ? (state?.stunServers ?? []) : [],
    egress: mode,
    proxy,
  });
  const checks = flags.check
    ? await checkAll(destinations, { trust, proxy }, (line) => process.stderr.write(`${line}\n`))
    : [];
  const verdict = flags.check ? verdictOf(destinations, checks) : null;
  const lines = destinations.map((d, i) => toLine(d, checks[i]));
  const out = streamPrinter();
  const rules = firewallRules(destinations);
  if (flags.output === 'json')
    out.json({ destinations: lines, rules, ...(verdict ? { check: verdict } : {}) });
  else {
    out.line(render(destinations, lines, Boolean(flags.check)));
    out.line('');
    out.line(`firewall rules (${rules.length}):`);
    out.lines(rules.map(ruleLine));
    if (verdict) out.line(verdictLine(verdict));
  }
  if (verdict === 'failed') process.exitCode = 1;
}

/** `GET /api/v1/network` of the relay (through the proxy that applies), or null when it does not answer it. */
async function relayNetwork(
  relay: string,
  trust: ReturnType<typeof trustFromFlags>,
  proxy: ProxySettings,
): Promise<RelayNetwork | null> {
  const connectVia = relayConnectVia(proxy, new URL(relay).protocol);
  const client = new RelayClient({ baseUrl: relay, trust, connectVia });
  try {
    return checkedBody(
      RelayNetwork,
      await client.json<unknown>('GET', '/api/v1/network'),
      'GET /api/v1/network',
    );
  } catch {
    return null;
  } finally {
    await client.close();
  }
}

function ruleLine(r: FirewallRule): string {
  const to = `${r.protocol.toUpperCase()} ${r.host.includes(':') ? `[${r.host}]` : r.host}:${r.port}`;
  const via = r.proxy === null ? '' : ` (through ${r.proxy}: allow the proxy, and CONNECT to this on it)`;
  return `  allow ${to}${via}: ${r.purposes.join(', ')}`;
}

function toLine(d: Destination, c: CheckResult | undefined): EgressLine {
  return {
    host: d.host,
    port: d.port,
    protocol: d.protocol,
    purpose: d.purpose,
    viaProxy: d.viaProxy,
    check: c?.check,
    reason: c?.reason,
    mapped: c?.mapped,
  };
}

function render(ds: readonly Destination[], lines: readonly EgressLine[], checked: boolean): string {
  const header = ['HOST', 'PORT', 'PROTOCOL', 'PURPOSE', 'VIA', ...(checked ? ['CHECK'] : [])];
  const rows = lines.map((l, i) => [
    l.host,
    String(l.port),
    l.protocol,
    l.purpose,
    ds[i]?.proxy ? `proxy ${ds[i]?.proxy}` : 'direct',
    ...(checked
      ? [
          l.check
            ? `${l.check}${l.reason ? `: ${l.reason}` : ''}${l.mapped ? ` (mapped ${l.mapped})` : ''}`
            : 'not probed',
        ]
      : []),
  ]);
  return table(header, rows);
}
