/**
 * Abuse replay: an admitted agent floods the hub with call-me-maybes over the relay, each naming new candidates,
 * to aim the hub's UDP port at them (one message used to make the hub ping every listed address at once: 166
 * messages a second gave 2,000 pings a second from the hub's address). Through the real relay process
 * (`tunnel-relay serve --udp-port` on loopback): the agent's key is registered through the API, its messages are
 * sealed for real and sent on its own relay connection. Each message lists a real UDP socket on a private address
 * (a veth address on this host), new ports there, and addresses the hub must never ping: a socket on loopback, a
 * socket on a link-local address, multicast, broadcast, unspecified, IPv4-mapped loopback, IPv6 link-local.
 * Everything the hub's UDP port sent in the flood (its datagram counter) stays within the per-peer ping budget of
 * docs/LIMITS.md, the private socket is pinged (private ranges stay allowed) while the loopback and link-local
 * sockets hear nothing, the excess call-me-maybes are dropped as rate-limited and the refused addresses are counted
 * by reason.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPair } from '../../shared/keys.js';
import { connectDerp, type DerpClient } from '../../shared/net/derp/client.js';
import { type DiscoAddress, newTxid, openDisco, sealDisco } from '../../shared/net/disco/disco-codec.js';
import { DiscoKeyring } from '../../shared/net/disco/disco-keyring.js';
import { DEFAULT_DISCO_LIMITS } from '../../shared/net/tunnel-endpoint/disco-limits.js';
import { buildIfStale, cleanup } from '../cli-harness.js';
import { createNetns } from '../helpers/netns.js';
import { requireIntegrationPrivileges } from '../helpers/privileges.js';
import { execCommand } from '../helpers/process.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { metrics, registerPeer, serveWithUdp, type UdpRelay } from '../hub-udp-fixture.js';
import { abuseScale } from './scale.js';

const scale = abuseScale();
const L = DEFAULT_DISCO_LIMITS;

interface Listener {
  socket: dgram.Socket;
  address: DiscoAddress;
  /** The hub's disco pings that arrived here (opened with the agent's key). */
  pings: number;
}

let relay: UdpRelay;
let agent: KeyPair;
let hubKey: Buffer;
let client: DerpClient;
let privateHost: string;
let linkLocalHost: string;
const closers: Array<() => unknown> = [];

async function listen(host: string): Promise<Listener> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
  closers.push(() => socket.close());
  const l: Listener = { socket, address: { host, port: socket.address().port }, pings: 0 };
  const ring = new DiscoKeyring({ privateKey: agent.privateKey });
  socket.on('message', (m) => {
    const r = openDisco(m, { keyFor: (k) => (k.equals(hubKey) ? ring.keyFor(k) : null) });
    if (r.ok && r.message.type === 'ping') l.pings++;
  });
  return l;
}

const sample = (m: Map<string, number>, name: string) => m.get(name) ?? 0;
const SENT = 'tunnel_relay_udp_datagrams_sent_total';
const RATE_LIMITED = 'tunnel_relay_disco_dropped_total{reason="rate-limited"}';
const refused = (reason: string) => `tunnel_relay_disco_candidates_refused_total{reason="${reason}"}`;

beforeAll(async () => {
  requireIntegrationPrivileges(['ip']);
  buildIfStale();
  // A private address on this host that is not the relay's (a veth's host side), and a link-local one beside it.
  const ns = await createNetns('cmm', { subnet: 'auto' });
  closers.push(() => ns.destroy());
  if (!ns.hostAddress || !ns.hostIf) throw new Error('the namespace has no host-side address');
  privateHost = ns.hostAddress;
  linkLocalHost = `169.254.${1 + (process.pid % 250)}.${1 + (randomBytes(1)[0]! % 250)}`;
  await execCommand('ip', ['addr', 'add', `${linkLocalHost}/32`, 'dev', ns.hostIf]);
  relay = await serveWithUdp('127.0.0.1');
  const reg = await registerPeer(relay, 'cmm-flood');
  agent = reg.keys;
  hubKey = Buffer.from(reg.tunnel.hubPublicKey, 'base64');
  client = connectDerp({
    url: `${relay.ready.url.replace(/^https/, 'wss')}/derp`,
    caPin: relay.ready.caPin,
    keyPair: agent,
    onPacket: () => {},
  });
  closers.push(() => client.close());
  await client.whenConnected(10_000);
}, 60_000);

afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c();
  await relay?.proc.stop();
  await cleanup();
});

describe('abuse: a call-me-maybe flood over the relay', () => {
  it("stays within the hub's per-peer budgets and never pings a refused address", async () => {
    const target = await listen(privateHost);
    const loopback = await listen('127.0.0.1');
    const linkLocal = await listen(linkLocalHost);
    const never: DiscoAddress[] = [
      loopback.address,
      linkLocal.address,
      { host: '224.0.0.251', port: 5_353 },
      { host: '255.255.255.255', port: target.address.port },
      { host: '0.0.0.0', port: target.address.port },
      { host: '::ffff:127.0.0.1', port: loopback.address.port },
      { host: 'fe80::1', port: target.address.port },
    ];
    const ring = new DiscoKeyring({ privateKey: agent.privateKey });
    const key = ring.keyFor(hubKey)!;
    const startedAt = Date.now();
    const m0 = await metrics(relay);
    const messages = 500 * scale;
    const perTick = 5 * scale;
    let sentAt = Date.now();
    let port = 20_000;
    for (let i = 0; i < messages; i++) {
      // Each message names the socket, 8 ports never named before, and the addresses never to be pinged.
      const fresh = Array.from({ length: 8 }, () => ({ host: privateHost, port: port++ }));
      sentAt = Math.max(sentAt + 1, Date.now());
      const m = {
        type: 'call-me-maybe' as const,
        txid: newTxid(),
        sentAt,
        candidates: [target.address, ...fresh, ...never],
      };
      client.send(hubKey, sealDisco(m, { sender: agent.publicKey, key }));
      if (i % perTick === perTick - 1) await sleep(30);
    }
    await waitFor(
      async () => {
        const m = await metrics(relay);
        return (
          sample(m, 'tunnel_relay_disco_messages_received_total') -
            sample(m0, 'tunnel_relay_disco_messages_received_total') >=
          messages
        );
      },
      20_000,
      `the hub's reading of ${messages} call-me-maybes`,
    );
    await sleep(1_000); // pings the last handled messages caused
    const m1 = await metrics(relay);
    const elapsedMs = Date.now() - startedAt;
    const pinged = sample(m1, SENT) - sample(m0, SENT);
    // Every datagram the hub's UDP port sent was a ping to an unconfirmed candidate (no other UDP traffic here).
    expect(pinged).toBeLessThanOrEqual(
      L.unconfirmedPingBurst + Math.floor(elapsedMs / L.unconfirmedPingIntervalMs),
    );
    expect(target.pings).toBeGreaterThan(0);
    expect(target.pings).toBeLessThanOrEqual(pinged);
    expect(loopback.pings).toBe(0);
    expect(linkLocal.pings).toBe(0);
    const handledAtMost = L.callMeMaybeBurst + Math.floor(elapsedMs / L.callMeMaybeIntervalMs);
    expect(sample(m1, RATE_LIMITED) - sample(m0, RATE_LIMITED)).toBeGreaterThanOrEqual(
      messages - handledAtMost,
    );
    const handled = messages - (sample(m1, RATE_LIMITED) - sample(m0, RATE_LIMITED));
    for (const [reason, perMessage] of [
      ['loopback', 2],
      ['link-local', 2],
      ['multicast', 1],
      ['broadcast', 1],
      ['unspecified', 1],
    ] as const)
      expect(sample(m1, refused(reason)) - sample(m0, refused(reason))).toBe(perMessage * handled);
    expect(sample(m1, refused('churn')) - sample(m0, refused('churn'))).toBeGreaterThan(0);
  });
});
