/**
 * A tunnel endpoint's candidate gatherer: what its disco (disco-peers.ts, which sends call-me-maybe and
 * rate-limits it) advertises as this node's candidates, and the STUN verdict its selectors work under. One
 * source per UDP transport the endpoint listens on (TunnelEndpoint.listenUdp with `candidates`), all together:
 * - candidates: each transport's configured public endpoint (`--udp-public-endpoint`) first, then each one's
 *   reflexive address and local interface addresses (shared/net/disco/candidates.ts: STUN asked through that
 *   transport, so the mapping is the one WireGuard's datagrams get); duplicates once, at most
 *   DISCO_MAX_CANDIDATES (one call-me-maybe);
 * - own addresses (which peers' candidates may never name, candidate-address.ts): for a source that names its
 *   transport's own addresses (the hub's port), those and its gathered candidates; a source that names none (the
 *   agent, which may share a host with the hub) refuses nothing;
 * - the STUN verdict: `varies` when any source's STUN servers disagree, or when a peer saw our mapping (its disco
 *   pong over UDP, `observed`) other than every reflexive address STUN gave (two destinations, two mappings);
 *   else `ok` when any source's STUN answered, `no-answer` when some asked and none answered, `unknown` otherwise.
 */
import type { Clock } from '../../clock.js';
import {
  CandidateGatherer,
  type CandidateGathererOptions,
  type GatheredCandidates,
  type StunServer,
  type StunVerdict,
} from '../disco/candidates.js';
import { DISCO_MAX_CANDIDATES, type DiscoAddress } from '../disco/disco-codec.js';
import type { DatagramSource } from '../wireguard/device.js';
import type { DiscoPeers } from './disco-peers.js';
import type { UdpTransport } from './udp-transport.js';

/** Where the gathered candidates go (the endpoint's DiscoPeers). */
export type CandidateSink = Pick<DiscoPeers, 'setConditions' | 'setLocalCandidates' | 'setOwnAddresses'>;

/** One UDP transport's candidate settings (the owner resolves names first). */
export interface UdpCandidatesOptions {
  /** Asked through the transport; none: no reflexive address, STUN answers go to WireGuard. */
  readonly stunServers: readonly StunServer[];
  /** The configured public endpoint of the transport, offered first (null or absent: none). */
  readonly publicCandidate?: DiscoAddress | null;
  /** The transport's own addresses, never probed; absent: this source refuses no address. */
  readonly ownAddresses?: readonly DiscoAddress[];
  /** The gatherer's pacing and interface list (tests). */
  readonly gatherer?: Pick<
    CandidateGathererOptions,
    'interfaces' | 'refreshMs' | 'interfaceCheckMs' | 'stunSendAtMs' | 'stunTimeoutMs' | 'newTxid'
  >;
  /** This transport's candidates or verdict changed (the owner's log). */
  onChange?(gathered: GatheredCandidates): void;
}

/** A transport's gathering, until stopped. */
export interface CandidateSource {
  /** The edge's STUN hook (udp-edge.ts): undefined without STUN servers. */
  readonly stun: ((datagram: Buffer, from: DatagramSource) => boolean) | undefined;
  stop(): void;
}

interface Source {
  readonly gatherer: CandidateGatherer;
  readonly options: UdpCandidatesOptions;
}

const same = (a: DiscoAddress, b: DiscoAddress) => a.host === b.host && a.port === b.port;
const unique = (list: readonly DiscoAddress[]) =>
  list.filter((c, i) => list.findIndex((d) => same(c, d)) === i);

export class EndpointCandidates {
  readonly #clock: Clock;
  readonly #sink: CandidateSink;
  readonly #sources = new Set<Source>();
  #observed: DiscoAddress | undefined;

  constructor(o: { clock: Clock; sink: CandidateSink }) {
    this.#clock = o.clock;
    this.#sink = o.sink;
  }

  /** Gathers for `transport` from now until the source is stopped (or close()). */
  add(transport: Pick<UdpTransport, 'send' | 'address' | 'port'>, o: UdpCandidatesOptions): CandidateSource {
    const gatherer = new CandidateGatherer({
      ...o.gatherer,
      clock: this.#clock,
      send: (d, host, port) => transport.send(d, host, port),
      bindAddress: transport.address,
      port: transport.port,
      stunServers: o.stunServers,
      onChange: (g) => {
        this.#publish();
        o.onChange?.(g);
      },
    });
    const source: Source = { gatherer, options: o };
    this.#sources.add(source);
    gatherer.start();
    return {
      stun: o.stunServers.length > 0 ? (d, from) => gatherer.receiveStun(d, from) : undefined,
      // The others' candidates alone from now on; the last one's stay advertised (the endpoint is closing).
      stop: () => {
        if (!this.#sources.delete(source)) return;
        gatherer.stop();
        if (this.#sources.size > 0) this.#publish();
      },
    };
  }

  /** A peer saw our UDP mapping at `address` (its pong): one that STUN did not give means `varies`. */
  observed(address: DiscoAddress): void {
    const was = this.#observed;
    this.#observed = address;
    if (!was || !same(was, address)) this.#sink.setConditions({ stun: this.verdict });
  }

  /** Every transport's candidates, the public endpoints first. */
  get candidates(): DiscoAddress[] {
    const sources = [...this.#sources];
    const told = sources.flatMap((s) => (s.options.publicCandidate ? [s.options.publicCandidate] : []));
    const gathered = sources.flatMap((s) => s.gatherer.current.candidates);
    return unique([...told, ...gathered]).slice(0, DISCO_MAX_CANDIDATES);
  }

  /** The STUN verdict over every transport and what peers observed (see the top of this file). */
  get verdict(): StunVerdict {
    const all = [...this.#sources].map((s) => s.gatherer.current);
    const verdicts = new Set(all.map((g) => g.stun));
    if (verdicts.has('varies')) return 'varies';
    if (!verdicts.has('ok')) return verdicts.has('no-answer') ? 'no-answer' : 'unknown';
    const reflexive = all.flatMap((g) => (g.stun === 'ok' && g.reflexive ? [g.reflexive] : []));
    const seen = this.#observed;
    return seen && reflexive.length > 0 && !reflexive.some((r) => same(r, seen)) ? 'varies' : 'ok';
  }

  close(): void {
    for (const s of this.#sources) s.gatherer.stop();
    this.#sources.clear();
  }

  #publish(): void {
    this.#sink.setConditions({ stun: this.verdict });
    this.#sink.setOwnAddresses(this.#ownAddresses());
    this.#sink.setLocalCandidates(this.candidates);
  }

  #ownAddresses(): DiscoAddress[] {
    return unique(
      [...this.#sources].flatMap((s) =>
        s.options.ownAddresses ? [...s.options.ownAddresses, ...s.gatherer.current.candidates] : [],
      ),
    );
  }
}
