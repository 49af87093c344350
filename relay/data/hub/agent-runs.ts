/**
 * Which run of an agent process the hub hears: every agent session probes the hub with ICMP echo under an
 * identifier drawn once per process (shared/net/ip/echo-prober.ts), sequence numbers from 1. A probe under
 * another identifier than the last one the hub answered, or sequence 1 after a later one, starts a new run: the
 * agent's side of the previous run's stream session is gone, so the hub must not open a stream on it. The
 * agent counts its session up only once the hub answered such a probe (shared/net/tunnel-endpoint/peer-liveness.ts), so
 * the hub learns of the new run before the agent says "session up".
 * One entry per agent record (a WeakMap: the peer directory's cap bounds it).
 */
import { isTunnelError } from '../../../shared/errors.js';
import { ICMP_ECHO_REQUEST, type Ipv4View, parseIcmpEcho } from '../../../shared/net/ip/index.js';

interface LastProbe {
  identifier: number;
  sequence: number;
}

export class AgentRuns {
  readonly #last = new WeakMap<object, LastProbe>();

  /**
   * Notes an echo request from `agent` to the hub. True when it starts a new run of the agent (its first probe
   * the hub hears counts as one); false for the same run, or a packet that is no echo request.
   */
  noteProbe(agent: object, ip: Ipv4View): boolean {
    const probe = echoRequestOf(ip);
    if (!probe) return false;
    const last = this.#last.get(agent);
    this.#last.set(agent, probe);
    if (!last) return true;
    // Sequence numbers wrap 0xffff -> 0 -> 1 within a run: 1 right after 0 is the same run.
    return probe.identifier !== last.identifier || (probe.sequence === 1 && last.sequence > 1);
  }
}

function echoRequestOf(ip: Ipv4View): LastProbe | null {
  try {
    const e = parseIcmpEcho(ip);
    if (e.type !== ICMP_ECHO_REQUEST || !e.checksumOk) return null;
    return { identifier: e.identifier, sequence: e.sequence };
  } catch (err) {
    if (isTunnelError(err)) return null;
    throw err;
  }
}
