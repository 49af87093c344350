/**
 * The hub side of disco under a peer that floods it (disco-limits.ts, shared/net/disco/candidate-address.ts): a hub's
 * DiscoPeers on a FakeClock, and an agent key that seals call-me-maybes and pings by hand. However many
 * call-me-maybes arrive and whatever they list, the hub handles at most the call-me-maybe budget, holds at most the
 * new-candidate budget, pings unconfirmed candidates at most at the ping budget's pace, and never pings an address
 * of a refused scope or its own.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { type DiscoAddress, type DiscoMessage, newTxid, openDisco, sealDisco } from '../disco/disco-codec.js';
import { DiscoKeyring } from '../disco/disco-keyring.js';
import { DEFAULT_DISCO_LIMITS, discoLimits } from './disco-limits.js';
import { DiscoPeers } from './disco-peers.js';
import { PathSelector } from './path-selector.js';

const HUB_UDP: DiscoAddress = { host: '203.0.113.1', port: 41_641 };
const L = DEFAULT_DISCO_LIMITS;

function setup() {
  const clock = new FakeClock();
  const hubKeys = generateKeyPair();
  const agentKeys = generateKeyPair();
  const pings: DiscoAddress[] = [];
  const relayed: Buffer[] = [];
  const agentRing = new DiscoKeyring({ privateKey: agentKeys.privateKey });
  const hub = new DiscoPeers({
    clock,
    privateKey: hubKeys.privateKey,
    sendRelay: (_to, d) => relayed.push(d) > 0,
    sendUdp: (d, host, port) => {
      const r = openDisco(d, { keyFor: (k) => agentRing.keyFor(k) });
      if (r.ok && r.message.type === 'ping') pings.push({ host, port });
      return true;
    },
    onRouteChange: () => {},
  });
  hub.setLocalCandidates([HUB_UDP]);
  hub.setOwnAddresses([HUB_UDP, { host: '10.9.9.9', port: 41_641 }]);
  hub.addPeer(agentKeys.publicKey);
  const seal = (m: DiscoMessage) =>
    sealDisco(m, { sender: agentKeys.publicKey, key: agentRing.keyFor(hubKeys.publicKey)! });
  const callMeMaybe = (candidates: DiscoAddress[]) =>
    hub.receive(seal({ type: 'call-me-maybe', txid: newTxid(), sentAt: clock.wallNow(), candidates }), {
      via: 'relay',
      key: agentKeys.publicKey,
    });
  const pingFrom = (from: DiscoAddress) =>
    hub.receive(seal({ type: 'ping', txid: newTxid(), sentAt: clock.wallNow() }), {
      via: 'udp',
      address: from.host,
      port: from.port,
    });
  const snapshot = () => hub.snapshot(agentKeys.publicKey);
  return { clock, hub, pings, relayed, callMeMaybe, pingFrom, snapshot };
}

/** 16 addresses no earlier list named. */
const freshList = (round: number): DiscoAddress[] =>
  Array.from({ length: 16 }, (_, i) => ({
    host: `10.${(round >> 8) & 255}.${round & 255}.${i + 1}`,
    port: 4_000,
  }));

describe('disco limits at the hub', () => {
  it('a flood of call-me-maybes with new lists stays within every budget', () => {
    const s = setup();
    const start = s.clock.now();
    const sent = 500;
    for (let i = 0; i < sent; i++) {
      s.callMeMaybe(freshList(i));
      s.clock.advance(20);
      const elapsed = s.clock.now() - start;
      // Checked at every step: pings to addresses that never answered never outrun their budget.
      expect(s.pings.length).toBeLessThanOrEqual(
        L.unconfirmedPingBurst + Math.floor(elapsed / L.unconfirmedPingIntervalMs),
      );
    }
    const elapsed = s.clock.now() - start;
    const handled = s.hub.stats.callMeMaybes;
    expect(handled).toBeLessThanOrEqual(L.callMeMaybeBurst + Math.floor(elapsed / L.callMeMaybeIntervalMs));
    expect(handled).toBeGreaterThanOrEqual(L.callMeMaybeBurst);
    expect(s.hub.dropped['rate-limited']).toBe(sent - handled);
    // Only addresses held are pinged, and new ones were held at most as their budget allows (the rest: churn).
    expect(s.hub.candidatesRefused.churn).toBeGreaterThan(0);
    expect(new Set(s.pings.map((p) => p.host)).size).toBeLessThanOrEqual(
      L.newCandidateBurst + Math.floor(elapsed / L.newCandidateIntervalMs),
    );
    // Without the budgets each handled call-me-maybe pings its whole list at once: 16 x handled and more.
    expect(s.pings.length).toBeLessThan(16 * handled);
  });

  it('one call-me-maybe of a few candidates is pinged at once, each address', () => {
    const s = setup();
    const list = [
      { host: '192.168.1.20', port: 4_000 },
      { host: '198.51.100.2', port: 6_000 },
      { host: 'fd00::2', port: 4_000 },
    ];
    s.callMeMaybe(list);
    expect(s.pings).toEqual(list);
  });

  it('never pings a refused scope or its own addresses, in any form; private ranges are pinged', () => {
    const s = setup();
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['::ffff:127.0.0.2', 'loopback'],
      ['::1', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.251', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'],
      ['::ffff:169.254.1.1', 'link-local'],
      ['240.0.0.1', 'reserved'],
      ['203.0.113.1', 'own-address'],
      ['::ffff:10.9.9.9', 'own-address'],
    ];
    const allowed = [
      { host: '10.1.2.3', port: 5_000 },
      { host: '100.64.7.7', port: 5_000 },
    ];
    s.callMeMaybe([...refused.map(([host]) => ({ host, port: 5_000 })), ...allowed]);
    s.clock.advance(60_000);
    expect(new Set(s.pings.map((p) => p.host))).toEqual(new Set(allowed.map((a) => a.host)));
    for (const reason of new Set(refused.map(([, r]) => r)))
      expect(s.hub.candidatesRefused[reason as keyof typeof s.hub.candidatesRefused]).toBe(
        refused.filter(([, r]) => r === reason).length,
      );
  });

  it('a list of refused addresses only changes nothing; an empty one still says the peer stopped UDP', () => {
    const s = setup();
    s.callMeMaybe([{ host: '10.1.2.3', port: 5_000 }]);
    s.clock.advance(100);
    s.callMeMaybe([{ host: '127.0.0.1', port: 5_000 }]);
    expect(s.snapshot()?.candidates).toBe(1);
    s.clock.advance(30_000);
    expect(s.pings.filter((p) => p.host === '10.1.2.3').length).toBeGreaterThan(1);
    s.callMeMaybe([]);
    expect(s.snapshot()?.candidates).toBe(0);
  });

  it('where a ping came from: loopback is kept (a peer on this host), other refused scopes are not', () => {
    const s = setup();
    s.pingFrom({ host: '127.0.0.1', port: 7_000 });
    s.pingFrom({ host: '169.254.1.1', port: 7_000 });
    s.pingFrom({ host: '203.0.113.1', port: 41_641 }); // our own endpoint
    s.clock.advance(1_000);
    expect(s.pings.map((p) => p.host)).toEqual(['127.0.0.1']);
    expect(s.hub.candidatesRefused['link-local']).toBe(1);
    expect(s.hub.candidatesRefused['own-address']).toBe(1);
  });

  it('a ping without a token waits for the next one: the selector wakes then, not before, and sends it', () => {
    const clock = new FakeClock();
    const sel = new PathSelector({
      clock,
      limits: discoLimits({ unconfirmedPingBurst: 2, unconfirmedPingIntervalMs: 1_000 }),
    });
    const udpPings = () => sel.probesDue().filter((p) => p.target.via === 'udp').length;
    sel.setCandidates([1, 2, 3, 4].map((i) => ({ host: `10.0.0.${i}`, port: 4_000 })));
    expect(udpPings()).toBe(2);
    expect(udpPings()).toBe(0);
    const wake = sel.nextWakeAt();
    expect(wake).toBeGreaterThan(clock.now());
    expect(wake).toBeLessThanOrEqual(clock.now() + 1_000);
    clock.advance(wake - clock.now());
    expect(udpPings()).toBe(1);
    clock.advance(1_000);
    expect(udpPings()).toBe(1);
  });

  it('rejects a limit that is not a positive integer', () => {
    expect(() => discoLimits({ callMeMaybeBurst: 0 })).toThrow(/callMeMaybeBurst = 0/);
    expect(() => discoLimits({ unconfirmedPingIntervalMs: 2.5 })).toThrow(/unconfirmedPingIntervalMs = 2.5/);
  });
});
