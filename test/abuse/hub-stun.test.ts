/**
 * Abuse replay: forged STUN answers on the hub's UDP port. With `--stun-server` the hub asks STUN servers,
 * through its UDP port, for the address its NAT maps that port to, and offers the answer to agents as a
 * candidate: an answer an attacker could forge would steer agents' probes. Two STUN servers of the test's own
 * (real sockets) get the hub's requests; one answers at once, the other only after the attacks. Answers with the
 * right transaction id from a spoofed source, answers from the server with a wrong transaction id, random
 * STUN-looking datagrams, and replays of the genuine answer (from the server and from elsewhere) are each
 * dropped and counted (`stun-unexpected`); the hub's address stays the one the servers reported. Through the
 * real relay process.
 */
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  encodeBindingSuccess,
  parseStunRequest,
  type StunBindingRequest,
} from '../../shared/net/stun/stun-codec.js';
import { buildIfStale, cleanup } from '../cli-harness.js';
import { waitFor } from '../helpers/wait.js';
import { metrics, serveWithUdp, type UdpRelay, udpCounter } from '../hub-udp-fixture.js';
import { logLines } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const HOST = '127.0.0.1';
/** What the genuine servers report, and what the attacker would like the hub to believe. */
const GENUINE = { address: Buffer.from([198, 51, 100, 7]), port: 40_000 };
const FORGED = { address: Buffer.from([203, 0, 113, 66]), port: 6_666 };

/** A UDP socket that records the hub's Binding requests (a STUN server, or the attacker's socket). */
interface Socket {
  socket: dgram.Socket;
  port: number;
  requests: StunBindingRequest[];
  send(d: Buffer): void;
}

async function socket(): Promise<Socket> {
  const s = dgram.createSocket('udp4');
  const requests: StunBindingRequest[] = [];
  s.on('message', (m, from) => {
    const r = parseStunRequest(m);
    if (r.kind !== 'request') return;
    requests.push(r);
    hubPort = from.port;
  });
  await new Promise<void>((r) => s.bind(0, HOST, () => r()));
  const out: Socket = {
    socket: s,
    port: s.address().port,
    requests,
    send: (d) => s.send(d, hubPort, HOST),
  };
  return out;
}

let relay: UdpRelay;
/** The hub's UDP port, where its STUN requests come from (known before the relay's start returns). */
let hubPort = 0;
let answering: Socket;
let holding: Socket;
let attacker: Socket;
const scale = abuseScale();

beforeAll(async () => {
  buildIfStale();
  [answering, holding, attacker] = [await socket(), await socket(), await socket()];
  // The first server answers each request at once.
  answering.socket.on('message', (m) => {
    const r = parseStunRequest(m);
    if (r.kind === 'request') answering.send(encodeBindingSuccess(r, GENUINE));
  });
  relay = await serveWithUdp(HOST, [
    '--stun-port',
    'off',
    '--stun-server',
    `${HOST}:${answering.port}`,
    '--stun-server',
    `${HOST}:${holding.port}`,
  ]);
}, 60_000);

afterAll(async () => {
  for (const s of [answering, holding, attacker]) s?.socket.close();
  await cleanup();
});

/** `count` sends, pausing now and then so the relay reads them (a burst past its receive buffer is lost). */
async function burst(count: number, send: (i: number) => void): Promise<void> {
  for (let i = 0; i < count; i++) {
    send(i);
    if (i % 20 === 19) await new Promise((r) => setTimeout(r, 10));
  }
}

/** The drops forged answers can land in: not an answer the hub asked for, or not STUN (WireGuard's parser). */
function drops(m: Map<string, number>): { stun: number; other: number } {
  const c = (reason: string) => udpCounter(m, 'datagrams_dropped_total', reason);
  return { stun: c('stun-unexpected'), other: c('bad-type') + c('malformed') };
}

const sum = (d: { stun: number; other: number }) => d.stun + d.other;

describe('abuse: forged STUN answers on the hub UDP port', () => {
  it('are dropped and counted, and the hub keeps the address its servers reported', async () => {
    await waitFor(() => holding.requests.length > 0, 10_000, "the hub's STUN request");
    const request = holding.requests[0]!;
    const n = 20 * scale;
    const before = drops(await metrics(relay));
    // The right transaction id from a spoofed source, while the hub still waits for the answer.
    await burst(n, () => attacker.send(encodeBindingSuccess(request, FORGED)));
    // From the server's own address, with a transaction id the hub never sent.
    const wrongId: StunBindingRequest = { ...request, id: randomBytes(12) };
    await burst(n, () => holding.send(encodeBindingSuccess(wrongId, FORGED)));
    // Random datagrams behind a Binding success header.
    await burst(n, (i) => {
      const junk = Buffer.concat([
        encodeBindingSuccess(request, FORGED).subarray(0, 20),
        randomBytes(i % 40),
      ]);
      junk.writeUInt16BE(junk.length - 20, 2);
      attacker.send(junk);
    });
    // The genuine answer, then its replays from the server and from elsewhere.
    const genuine = encodeBindingSuccess(request, GENUINE);
    holding.send(genuine);
    await new Promise((r) => setTimeout(r, 200));
    await burst(n, () => {
      holding.send(genuine);
      attacker.send(genuine);
    });
    const attacks = 5 * n;
    await waitFor(
      async () => sum(drops(await metrics(relay))) - sum(before) >= attacks,
      10_000,
      `${attacks} forged STUN answers counted`,
      200,
    );
    const after = drops(await metrics(relay));
    // The answers to no request of the hub's as stun-unexpected (the genuine one too when its round had
    // timed out under load); the random ones are no valid STUN answer, so WireGuard's parser drops them.
    expect(after.stun - before.stun).toBeGreaterThanOrEqual(4 * n);
    expect(after.stun - before.stun).toBeLessThanOrEqual(5 * n + 1);
    expect(sum(after) - sum(before)).toBeLessThanOrEqual(attacks + 1);
    expect(udpCounter(await metrics(relay), 'datagrams_authenticated_total')).toBe(0);
    // The hub's address is the genuine one, never the forged one.
    const said = logLines(relay.proc).filter((l) => l.msg === 'hub: address from STUN changed');
    expect(said.some((l) => JSON.stringify(l.reflexive) === '{"host":"198.51.100.7","port":40000}')).toBe(
      true,
    );
    expect(JSON.stringify(said)).not.toContain('203.0.113.66');
  }, 60_000);
});
