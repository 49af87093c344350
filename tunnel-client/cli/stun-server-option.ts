/**
 * `--stun-server HOST:PORT` of join and run (repeatable, at most MAX_AGENT_STUN_SERVERS, saved in the state
 * dir): STUN servers the agent asks, besides the relay's advertised responder, for its address behind NAT.
 * Two servers at different addresses tell whether its NAT maps per destination. With `--egress 443-only` the
 * agent sends no UDP at all, so the flag is refused there.
 */
import { Option } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { parseHostPort } from '../../shared/kit/cli/parsers.js';

export const MAX_AGENT_STUN_SERVERS = 4;

/** `host:port` as saved (IPv6 in brackets). */
function endpointText(value: string): string {
  const hp = parseHostPort(value, '--stun-server');
  return hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
}

export function stunServerOption(): Option {
  return new Option(
    '--stun-server <host:port>',
    `STUN server asked for this agent's address behind NAT, besides the relay's (repeatable, at most ${MAX_AGENT_STUN_SERVERS}; saved)`,
  ).argParser((value: string, prev: string[] = []) => {
    const endpoint = endpointText(value);
    if (prev.includes(endpoint))
      throw new TunnelError('BAD_INPUT', `--stun-server ${JSON.stringify(value)} is given twice`);
    if (prev.length >= MAX_AGENT_STUN_SERVERS)
      throw new TunnelError(
        'BAD_INPUT',
        `--stun-server ${JSON.stringify(value)}: at most ${MAX_AGENT_STUN_SERVERS} STUN servers`,
      );
    return [...prev, endpoint];
  });
}

/** BAD_INPUT when STUN servers are set for an agent that sends no UDP (`--egress 443-only`). */
export function checkStunServersWithEgress(stunServers: readonly string[], egress: string | undefined): void {
  if (stunServers.length > 0 && egress === '443-only')
    throw new TunnelError(
      'BAD_INPUT',
      `--stun-server ${stunServers.join(', ')}: not used with --egress 443-only (the agent sends no UDP at all)`,
    );
}
