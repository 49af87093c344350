/**
 * Device.receive with endpoints that name their peer's key (Endpoint.peerKey), as a relay connection does: a
 * hub device with two peers, A and B, each on its own relay endpoint. A's datagrams (initiation, transport data,
 * its response to the hub's initiation) handed to the hub on B's endpoint are dropped as `sender-mismatch` before
 * they are opened: A's handshake state, replay window and endpoint stay as they were, so the same datagram on A's
 * own endpoint is still accepted, and the hub keeps answering A on A's endpoint.
 */
import { describe, expect, it } from 'vitest';
import { udpFrom } from '../../../test/helpers/wireguard-link.js';
import { FakeClock } from '../../clock.js';
import { generateKeyPair } from '../../keys.js';
import { Device } from './device.js';

const HUB_ADDR = '100.64.0.1';
const A_ADDR = '100.64.0.2';
const B_ADDR = '100.64.0.3';

interface RelayEndpoint {
  readonly key: string;
  readonly peerKey?: Uint8Array;
  send(datagram: Buffer): boolean;
}

function setup() {
  const clock = new FakeClock();
  const hubKeys = generateKeyPair();
  const aKeys = generateKeyPair();
  const bKeys = generateKeyPair();
  const toA: Buffer[] = [];
  const toB: Buffer[] = [];
  const fromA: RelayEndpoint = {
    key: 'relay:a',
    peerKey: aKeys.publicKey,
    send: (d) => toA.push(Buffer.from(d)) > 0,
  };
  const fromB: RelayEndpoint = {
    key: 'relay:b',
    peerKey: bKeys.publicKey,
    send: (d) => toB.push(Buffer.from(d)) > 0,
  };
  const toHub: Buffer[] = [];
  const gotHub: string[] = [];
  const hub = new Device<RelayEndpoint>({
    privateKey: hubKeys.privateKey,
    clock,
    authenticatedSources: true,
    onPacket: (p) => gotHub.push(p.subarray(28).toString()),
  });
  const hubPeerA = hub.addPeer({ publicKey: aKeys.publicKey, endpoint: fromA, allowedIps: [`${A_ADDR}/32`] });
  hub.addPeer({ publicKey: bKeys.publicKey, endpoint: fromB, allowedIps: [`${B_ADDR}/32`] });
  const toHubEnd = { key: 'relay:hub', send: (d: Buffer) => toHub.push(Buffer.from(d)) > 0 };
  const a = new Device<typeof toHubEnd>({
    privateKey: aKeys.privateKey,
    clock,
    onPacket: () => {},
  });
  const aPeerHub = a.addPeer({
    publicKey: hubKeys.publicKey,
    endpoint: toHubEnd,
    allowedIps: [`${HUB_ADDR}/32`],
  });
  return { clock, hub, hubPeerA, a, aPeerHub, fromA, fromB, toA, toB, toHub, gotHub, toHubEnd };
}

describe('Device.receive: a datagram of another peer on an endpoint that names its key', () => {
  it('drops it before opening it; the same datagram on its own endpoint is accepted', () => {
    const s = setup();
    s.aPeerHub.send(udpFrom(A_ADDR, HUB_ADDR, 'one'));
    const initiation = s.toHub.shift()!;
    expect(s.hub.receive(Buffer.from(initiation), s.fromB)).toBe('sender-mismatch');
    expect(s.hubPeerA.lastHandshakeAt).toBeNull();
    expect(s.toB).toEqual([]);
    // The initiation was never consumed: on A's endpoint it completes the handshake.
    expect(s.hub.receive(initiation, s.fromA)).toBeNull();
    expect(s.toA).toHaveLength(1);
    for (const d of s.toA.splice(0)) s.a.receive(d, s.toHubEnd);
    const data = s.toHub.splice(0);
    expect(data).toHaveLength(1);
    const packet = data[0]!;
    expect(s.hub.receive(Buffer.from(packet), s.fromB)).toBe('sender-mismatch');
    expect(s.gotHub).toEqual([]);
    // The replay window did not see the copy: A's own datagram still authenticates and is delivered.
    expect(s.hub.receive(packet, s.fromA)).toBeNull();
    expect(s.gotHub).toEqual(['one']);
    expect(s.hub.stats.drops['sender-mismatch']).toBe(2);
  });

  it("never moves a peer's endpoint to another peer's relay connection", () => {
    const s = setup();
    s.aPeerHub.send(udpFrom(A_ADDR, HUB_ADDR, 'hello'));
    for (const d of s.toHub.splice(0)) s.hub.receive(d, s.fromA);
    for (const d of s.toA.splice(0)) s.a.receive(d, s.toHubEnd);
    for (const d of s.toHub.splice(0)) s.hub.receive(d, s.fromA);
    expect(s.gotHub).toEqual(['hello']);
    // Every later datagram of A arrives first on B's connection, then on A's own.
    for (let i = 0; i < 5; i++) {
      s.aPeerHub.send(udpFrom(A_ADDR, HUB_ADDR, `m${i}`));
      for (const d of s.toHub.splice(0)) {
        expect(s.hub.receive(Buffer.from(d), s.fromB)).toBe('sender-mismatch');
        expect(s.hub.receive(d, s.fromA)).toBeNull();
      }
    }
    expect(s.hubPeerA.endpoint).toBe(s.fromA);
    s.toA.splice(0);
    expect(s.hub.send(udpFrom(HUB_ADDR, A_ADDR, 'reply'))).toBe(true);
    expect(s.toA).toHaveLength(1);
    expect(s.toB).toEqual([]);
  });

  it("drops a response to the hub's initiation that arrives on another peer's endpoint", () => {
    const s = setup();
    s.hub.send(udpFrom(HUB_ADDR, A_ADDR, 'x')); // the hub initiates towards A
    const init = s.toA.splice(0);
    expect(init).toHaveLength(1);
    s.a.receive(init[0]!, s.toHubEnd);
    const response = s.toHub.shift()!;
    expect(s.hub.receive(Buffer.from(response), s.fromB)).toBe('sender-mismatch');
    expect(s.hubPeerA.lastHandshakeAt).toBeNull();
    expect(s.hub.receive(response, s.fromA)).toBeNull();
    expect(s.hubPeerA.lastHandshakeAt).not.toBeNull();
  });

  it('an endpoint that names no key keeps the roaming rule: any authenticated datagram moves the endpoint', () => {
    const s = setup();
    const roamed: RelayEndpoint = { key: 'somewhere', send: () => true };
    s.aPeerHub.send(udpFrom(A_ADDR, HUB_ADDR, 'one'));
    for (const d of s.toHub.splice(0)) expect(s.hub.receive(d, roamed)).toBeNull();
    expect(s.hubPeerA.endpoint).toBe(roamed);
  });
});
