/**
 * Abuse replay: bad disco input at the hub, through the real relay process (`tunnel-relay serve --udp-port`),
 * over its UDP port and over the relay (DERP). A registered agent key (its keys generated here) pings the hub
 * for real and gets a pong at its own address; then replays of that ping (from the same and from another
 * address), pings boxed with the wrong key, from an unregistered key, stale or from the future, pongs nobody
 * asked for, candidates over UDP, truncated and random datagrams behind the disco magic, and, over the relay,
 * another agent's sealed message sent from this agent's connection; a path MTU probe is answered once with a short
 * ack (never amplified), and its replays and acks nobody asked for are dropped. Every one is dropped and counted by
 * reason on /metrics (tunnel_relay_disco_dropped_total), nothing is sent to the other address, and the agent
 * is still answered at its own address afterwards.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, type KeyPair } from '../../shared/keys.js';
import { connectDerp, type DerpClient } from '../../shared/net/derp/client.js';
import {
  DISCO_MAGIC,
  DISCO_MIN_LEN,
  type DiscoMessage,
  newTxid,
  openDisco,
  sealDisco,
} from '../../shared/net/disco/disco-codec.js';
import { DiscoKeyring } from '../../shared/net/disco/disco-keyring.js';
import { buildIfStale, cleanup } from '../cli-harness.js';
import { waitFor } from '../helpers/wait.js';
import { metrics, registerPeer, serveWithUdp, type UdpRelay } from '../hub-udp-fixture.js';
import { abuseScale } from './scale.js';

const HOST = '127.0.0.1';
const scale = abuseScale();

let relay: UdpRelay;
let hubKey: Buffer;
let agent: KeyPair;
let other: KeyPair;
const closers: Array<() => void> = [];

/** A UDP socket that records what comes back. */
async function socket(): Promise<{ s: dgram.Socket; got: Buffer[]; send(d: Buffer): void; port: number }> {
  const s = dgram.createSocket('udp4');
  const got: Buffer[] = [];
  s.on('message', (m) => got.push(m));
  await new Promise<void>((r) => s.bind(0, HOST, () => r()));
  closers.push(() => s.close());
  return { s, got, send: (d) => s.send(d, relay.udpPort, HOST), port: s.address().port };
}

const sealAs = (keys: KeyPair, m: DiscoMessage, boxedBy: KeyPair = keys) =>
  sealDisco(m, {
    sender: keys.publicKey,
    key: new DiscoKeyring({ privateKey: boxedBy.privateKey }).keyFor(hubKey)!,
  });
const ping = (sentAt = Date.now()): DiscoMessage => ({ type: 'ping', txid: newTxid(), sentAt });

/** The hub's pongs among datagrams an agent socket received (opened with the agent's key). */
function pongsIn(got: Buffer[]): DiscoMessage[] {
  const ring = new DiscoKeyring({ privateKey: agent.privateKey });
  return got.flatMap((d) => {
    const r = openDisco(d, { keyFor: (k) => (k.equals(hubKey) ? ring.keyFor(k) : null) });
    return r.ok && r.message.type === 'pong' ? [r.message] : [];
  });
}

/** The hub's probe acks among datagrams an agent socket received, with each datagram's length. */
function acksIn(got: Buffer[]): { size: number; length: number }[] {
  const ring = new DiscoKeyring({ privateKey: agent.privateKey });
  return got.flatMap((d) => {
    const r = openDisco(d, { keyFor: (k) => (k.equals(hubKey) ? ring.keyFor(k) : null) });
    return r.ok && r.message.type === 'probe-ack' ? [{ size: r.message.size, length: d.length }] : [];
  });
}

function dropped(m: Map<string, number>, reason: string): number {
  return m.get(`tunnel_relay_disco_dropped_total{reason="${reason}"}`) ?? 0;
}

async function dropsReach(m0: Map<string, number>, reason: string, by: number): Promise<void> {
  await waitFor(
    async () => dropped(await metrics(relay), reason) - dropped(m0, reason) >= by,
    10_000,
    `${by} disco drops counted as ${reason}`,
  );
  expect(dropped(await metrics(relay), reason) - dropped(m0, reason)).toBe(by);
}

beforeAll(async () => {
  buildIfStale();
  relay = await serveWithUdp(HOST);
  const a = await registerPeer(relay, 'disco-abuse');
  const b = await registerPeer(relay, 'disco-other');
  agent = a.keys;
  other = b.keys;
  hubKey = Buffer.from(a.tunnel.hubPublicKey, 'base64');
}, 60_000);

afterAll(async () => {
  for (const c of closers.splice(0)) c();
  await cleanup();
});

describe('abuse: bad disco input at the hub', () => {
  it('a real ping is answered at its address; its replay, from there or elsewhere, is dropped', async () => {
    const legit = await socket();
    const spoofer = await socket();
    const d = sealAs(agent, ping());
    legit.send(d);
    // The hub answers with a pong, and pings the address the ping came from (a candidate to confirm).
    await waitFor(() => pongsIn(legit.got).length === 1, 5_000, 'the pong');
    const pong = pongsIn(legit.got)[0];
    expect(pong?.type === 'pong' && pong.observed).toEqual({ host: HOST, port: legit.port });
    const m0 = await metrics(relay);
    const n = 5 * scale;
    for (let i = 0; i < n; i++) {
      legit.send(d);
      spoofer.send(d);
    }
    await dropsReach(m0, 'replay', 2 * n);
    expect(pongsIn(legit.got).length).toBe(1);
    expect(spoofer.got).toEqual([]);
  });

  it('wrong box, unknown sender, stale, future, unasked pong, candidates over UDP: each by its reason', async () => {
    const m0 = await metrics(relay);
    const attacker = await socket();
    const mallory = generateKeyPair();
    const n = 3 * scale;
    for (let i = 0; i < n; i++) {
      attacker.send(sealAs(agent, ping(), mallory)); // claims the agent, boxed with another key
      attacker.send(sealAs(mallory, ping())); // a key the relay never registered
      attacker.send(sealAs(agent, ping(Date.now() - 600_000)));
      attacker.send(sealAs(agent, ping(Date.now() + 600_000)));
      attacker.send(sealAs(agent, { type: 'pong', txid: newTxid(), sentAt: Date.now() }));
      attacker.send(
        sealAs(agent, {
          type: 'call-me-maybe',
          txid: newTxid(),
          sentAt: Date.now(),
          candidates: [{ host: '192.0.2.66', port: 666 }],
        }),
      );
      // Lets the relay read the burst (a socket buffer overrun loses datagrams in the kernel), and moves the
      // clock on: the hub remembers 64 txids per sender, then refuses anything sent at or before the oldest.
      await new Promise((r) => setTimeout(r, 2));
    }
    await dropsReach(m0, 'auth', n);
    await dropsReach(m0, 'unknown-sender', n);
    await dropsReach(m0, 'stale', n);
    await dropsReach(m0, 'future', n);
    await dropsReach(m0, 'unexpected-pong', n);
    await dropsReach(m0, 'wrong-carrier', n);
    expect(attacker.got).toEqual([]);
  });

  it('a path MTU probe gets one short ack at its address; replays and unasked acks are dropped', async () => {
    const legit = await socket();
    const spoofer = await socket();
    const probe = sealAs(agent, { type: 'probe', txid: newTxid(), sentAt: Date.now(), size: 20_000 });
    expect(probe.length).toBe(20_000);
    legit.send(probe);
    await waitFor(() => acksIn(legit.got).length === 1, 5_000, 'the probe ack');
    // The ack says the size that arrived, in a datagram of 104 bytes: no amplification.
    expect(acksIn(legit.got)).toEqual([{ size: 20_000, length: DISCO_MIN_LEN + 4 }]);
    const m0 = await metrics(relay);
    const n = 3 * scale;
    for (let i = 0; i < n; i++) {
      legit.send(probe);
      spoofer.send(probe);
      spoofer.send(sealAs(agent, { type: 'probe-ack', txid: newTxid(), sentAt: Date.now(), size: 60_000 }));
      await new Promise((r) => setTimeout(r, 2)); // 20 KB datagrams: let the relay read them
    }
    await dropsReach(m0, 'replay', 2 * n);
    await dropsReach(m0, 'unexpected-pong', n);
    expect(acksIn(legit.got).length).toBe(1);
    expect(spoofer.got).toEqual([]);
  });

  it('truncated and random datagrams behind the magic never get an answer', async () => {
    const m0 = await metrics(relay);
    const attacker = await socket();
    const n = 20 * scale;
    const whole = sealAs(agent, ping());
    for (let i = 0; i < n; i++) {
      attacker.send(whole.subarray(0, DISCO_MAGIC.length + (i % (DISCO_MIN_LEN - DISCO_MAGIC.length))));
      attacker.send(Buffer.concat([DISCO_MAGIC, agent.publicKey, randomBytes(62 + (i % 200))]));
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 5));
    }
    await dropsReach(m0, 'short', n);
    await dropsReach(m0, 'auth', n);
    expect(attacker.got).toEqual([]);
  });

  it('over the relay: another agent sealed it, or it is replayed: dropped; the agent is still answered', async () => {
    const m0 = await metrics(relay);
    const pongs: Buffer[] = [];
    const client: DerpClient = connectDerp({
      url: `${relay.ready.url.replace(/^https/, 'wss')}/derp`,
      caPin: relay.ready.caPin,
      keyPair: agent,
      onPacket: (src, payload) => {
        if (src.equals(hubKey)) pongs.push(Buffer.from(payload));
      },
    });
    closers.push(() => client.close());
    await client.whenConnected(10_000);
    const mine = sealAs(agent, ping());
    expect(client.send(hubKey, mine)).toBe(true);
    await waitFor(
      () => pongs.some((p) => p.subarray(0, 6).equals(DISCO_MAGIC)),
      5_000,
      'a pong over the relay',
    );
    const answered = pongs.length;
    const n = 3 * scale;
    for (let i = 0; i < n; i++) {
      client.send(hubKey, sealAs(other, ping())); // genuine, but not from this connection's key
      client.send(hubKey, mine);
    }
    await dropsReach(m0, 'sender-mismatch', n);
    await dropsReach(m0, 'replay', n);
    client.send(hubKey, sealAs(agent, ping()));
    await waitFor(() => pongs.length > answered, 5_000, 'the next pong');
  });
});
