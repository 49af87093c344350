/**
 * Test helper: two Devices joined by an in-memory "network" that queues datagrams until pump()ed,
 * so tests can inspect, drop, duplicate or reorder them. Used by the unit tests only.
 */
import { FakeClock } from '../../shared/clock.js';
import { generateKeyPair, type KeyPair } from '../../shared/keys.js';
import { parseIpv4Address } from '../../shared/net/ip/address.js';
import { buildUdpPacket } from '../../shared/net/ip/udp.js';
import type { WireGuardTimers } from '../../shared/net/wireguard/constants.js';
import { Device, type Endpoint, type Peer } from '../../shared/net/wireguard/device.js';

export interface Wire {
  from: 'a' | 'b';
  data: Buffer;
  /** Clock time when sent. */
  at: number;
}

export interface LinkOptions {
  timers?: Partial<WireGuardTimers>;
  pskA?: Buffer;
  pskB?: Buffer;
  underLoadB?: () => boolean;
  /** Device B trusts its transport to authenticate sources (the hub behind the relay). */
  authenticatedB?: boolean;
  clock?: FakeClock;
}

export const A_ADDR = '10.9.0.1';
export const B_ADDR = '10.9.0.2';

export function udpFrom(src: string, dst: string, payload: string | Buffer, srcPort = 1000): Buffer {
  return buildUdpPacket(
    { src: parseIpv4Address(src), dst: parseIpv4Address(dst), srcPort, dstPort: 2000 },
    typeof payload === 'string' ? Buffer.from(payload) : payload,
  );
}

export class Link {
  readonly clock: FakeClock;
  readonly keysA: KeyPair = generateKeyPair();
  readonly keysB: KeyPair = generateKeyPair();
  readonly a: Device;
  readonly b: Device;
  readonly peerOfA: Peer; // A's view of B
  readonly peerOfB: Peer; // B's view of A
  readonly queue: Wire[] = [];
  /** Every datagram ever sent, in order. */
  readonly log: Wire[] = [];
  readonly gotA: Buffer[] = [];
  readonly gotB: Buffer[] = [];
  /** B's endpoint for A (what B sends goes on the wire from 'b'), and A's for B. */
  endpointA: Endpoint = this.endpoint('mem:a', 'b');
  endpointB: Endpoint = this.endpoint('mem:b', 'a');
  /** Return false to drop a datagram on the wire. */
  filter: (w: Wire) => boolean = () => true;

  constructor(o: LinkOptions = {}) {
    this.clock = o.clock ?? new FakeClock();
    const mk = (priv: Buffer, got: Buffer[], underLoad?: () => boolean, authenticatedSources = false) =>
      new Device({
        privateKey: priv,
        clock: this.clock,
        timers: o.timers,
        underLoad,
        authenticatedSources,
        onPacket: (p) => got.push(Buffer.from(p)),
      });
    this.a = mk(this.keysA.privateKey, this.gotA);
    this.b = mk(this.keysB.privateKey, this.gotB, o.underLoadB, o.authenticatedB);
    this.peerOfA = this.a.addPeer({
      publicKey: this.keysB.publicKey,
      presharedKey: o.pskA,
      endpoint: this.endpointB,
      allowedIps: [`${B_ADDR}/32`],
    });
    this.peerOfB = this.b.addPeer({
      publicKey: this.keysA.publicKey,
      presharedKey: o.pskB,
      endpoint: this.endpointA,
      allowedIps: [`${A_ADDR}/32`],
    });
  }

  /** An endpoint named `key` whose datagrams go on the wire as sent by `side`. */
  endpoint(key: string, side: 'a' | 'b'): Endpoint {
    return {
      key,
      send: (d) => {
        const w: Wire = { from: side, data: Buffer.from(d), at: this.clock.now() };
        this.log.push(w);
        if (this.filter(w)) this.queue.push(w);
        return true;
      },
    };
  }

  /** Delivers one queued datagram; returns it. */
  step(): Wire | undefined {
    const w = this.queue.shift();
    if (!w) return undefined;
    if (w.from === 'a') this.b.receive(Buffer.from(w.data), this.endpointA);
    else this.a.receive(Buffer.from(w.data), this.endpointB);
    return w;
  }

  /** Delivers until the wire is empty (bounded). */
  pump(max = 1000): number {
    let n = 0;
    while (this.queue.length > 0 && n < max) {
      this.step();
      n++;
    }
    return n;
  }

  sentBy(side: 'a' | 'b', type?: number): Wire[] {
    return this.log.filter((w) => w.from === side && (type === undefined || w.data[0] === type));
  }

  close(): void {
    this.a.close();
    this.b.close();
  }
}
