/**
 * The endpoint's candidate gatherer on real UDP transports and the relay's real STUN responder: each transport an
 * endpoint listens on with `candidates` adds its public endpoint, its reflexive address (STUN asked through that
 * transport, answered through the endpoint's UDP edge) and its interface addresses to what disco advertises; a
 * stopped transport's go; the STUN verdict is over every transport and what peers observed; only a transport that
 * names its own addresses makes them (and its candidates) refused.
 */
import { createSocket } from 'node:dgram';
import type { NetworkInterfaceInfo } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { startStunResponder } from '../../../relay/data/stun/stun-responder.js';
import { realClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import type { DiscoAddress } from '../disco/disco-codec.js';
import { parseIpv4Address } from '../ip/index.js';
import { type CandidateSink, EndpointCandidates } from './endpoint-candidates.js';
import { TunnelEndpoint } from './tunnel-endpoint.js';
import { UdpTransport } from './udp-transport.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const NO_INTERFACES = { gatherer: { interfaces: () => ({}) } };
const PUBLIC: DiscoAddress = { host: '203.0.113.9', port: 51820 };

async function transport(host = '127.0.0.1'): Promise<UdpTransport> {
  const t = await UdpTransport.open({ host, port: 0, gso: null });
  closers.push(() => t.close());
  return t;
}

async function stunServer() {
  const stun = await startStunResponder({ host: '127.0.0.1', port: 0, clock: realClock });
  closers.push(() => stun.close());
  return { host: '127.0.0.1', port: stun.port };
}

/** An endpoint with disco (no peers) whose UDP transport sends are `sends`. */
function endpoint(sends?: UdpTransport): TunnelEndpoint {
  const e = new TunnelEndpoint({
    privateKey: generateKeyPair().privateKey,
    address: parseIpv4Address('100.64.0.1'),
    clock: realClock,
    streams: { role: 'client' },
    disco: {},
    udp: sends,
    onPacket: () => {},
  });
  closers.push(() => e.close());
  return e;
}

async function until(what: string, ok: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("a tunnel endpoint's candidates", () => {
  it('gathers for every UDP transport it listens on, the public endpoint first, until one stops', async () => {
    const stun = await stunServer();
    const [a, b] = [await transport(), await transport()];
    const e = endpoint(a);
    e.listenUdp(a, { candidates: { ...NO_INTERFACES, stunServers: [stun], publicCandidate: PUBLIC } });
    const onB = e.listenUdp(b, { candidates: { ...NO_INTERFACES, stunServers: [stun] } });
    const both = [PUBLIC, { host: '127.0.0.1', port: a.port }, { host: '127.0.0.1', port: b.port }];
    await until('both reflexive addresses', () => e.candidates?.candidates.length === 3);
    expect(e.candidates?.candidates).toEqual(both);
    expect(e.disco?.conditions.stun).toBe('ok');
    onB.stop();
    expect(e.candidates?.candidates).toEqual(both.slice(0, 2));
  });

  it("lists a transport's interface addresses without STUN, verdict unknown", async () => {
    const t = await transport('0.0.0.0');
    const e = endpoint(t);
    const eth0: NetworkInterfaceInfo = {
      address: '10.0.0.5',
      family: 'IPv4',
      internal: false,
      netmask: '255.0.0.0',
      mac: '',
      cidr: null,
    };
    e.listenUdp(t, { candidates: { stunServers: [], gatherer: { interfaces: () => ({ eth0: [eth0] }) } } });
    expect(e.candidates?.candidates).toEqual([{ host: '10.0.0.5', port: t.port }]);
    expect(e.disco?.conditions.stun).toBe('unknown');
  });

  it('says no-answer when the STUN server never answers', async () => {
    const silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => silent.close(() => r())));
    const t = await transport();
    const e = endpoint(t);
    const server = { host: '127.0.0.1', port: silent.address().port };
    e.listenUdp(t, {
      candidates: { stunServers: [server], gatherer: { interfaces: () => ({}), stunTimeoutMs: 100 } },
    });
    await until('the round to time out', () => e.disco?.conditions.stun === 'no-answer');
  });

  it('says varies once a peer observed a mapping STUN did not give', async () => {
    const stun = await stunServer();
    const t = await transport();
    const e = endpoint(t);
    e.listenUdp(t, { candidates: { ...NO_INTERFACES, stunServers: [stun] } });
    await until('STUN', () => e.disco?.conditions.stun === 'ok');
    e.candidates?.observed({ host: '198.51.100.1', port: t.port });
    expect(e.disco?.conditions.stun).toBe('varies');
    e.candidates?.observed({ host: '127.0.0.1', port: t.port });
    expect(e.disco?.conditions.stun).toBe('ok');
  });

  it('refuses as own only the addresses of a transport that names its own', async () => {
    const stun = await stunServer();
    const own: DiscoAddress[][] = [];
    const sink: CandidateSink = {
      setConditions: () => {},
      setLocalCandidates: () => {},
      setOwnAddresses: (list) => void own.push([...list]),
    };
    const candidates = new EndpointCandidates({ clock: realClock, sink });
    closers.push(() => candidates.close());
    const [hubPort, other] = [await transport(), await transport()];
    const bound = { host: '127.0.0.1', port: hubPort.port };
    const otherSource = candidates.add(other, { ...NO_INTERFACES, stunServers: [stun] });
    other.listen({ onWireGuard: (d, from) => otherSource.stun?.(d, from) });
    const source = candidates.add(hubPort, { ...NO_INTERFACES, stunServers: [stun], ownAddresses: [bound] });
    hubPort.listen({ onWireGuard: (d, from) => source.stun?.(d, from) });
    await until('both to learn their mappings', () => candidates.candidates.length === 2);
    // The other transport's reflexive address is not refused: only the port's own and its gathered one (the same).
    expect(own.at(-1)).toEqual([bound]);
  });
});
