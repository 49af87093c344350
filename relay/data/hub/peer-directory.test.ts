/**
 * PeerDirectory on its own: a real WireGuard Device (its datagrams go nowhere), a FakeClock and an
 * in-memory store whose lookups the test answers by hand.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { generateKeyPair, generatePresharedKey, keyToBase64 } from '../../../shared/keys.js';
import { TunnelEndpoint } from '../../../shared/net/tunnel-endpoint/tunnel-endpoint.js';
import type { AdmittedPeer } from '../../control/model/admission.js';
import {
  type AgentRecord,
  MAX_PENDING_LOOKUPS,
  MAX_PENDING_PER_KEY,
  PeerDirectory,
} from './peer-directory.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0).reverse()) c();
});

interface Lookup {
  key: string;
  resolve(p: AdmittedPeer | null): void;
  reject(err: Error): void;
}

function rig(maxPeers = 16) {
  const clock = new FakeClock();
  const endpoint = new TunnelEndpoint({
    privateKey: generateKeyPair().privateKey,
    address: 0x64400001,
    clock,
    maxPeers,
    streams: { role: 'client' },
    onPacket: () => {},
  });
  const device = endpoint.device;
  const lookups: Lookup[] = [];
  const got: Array<{ d: Buffer; rec: AgentRecord }> = [];
  const logs: string[] = [];
  const dir = new PeerDirectory({
    addPeer: (p) => endpoint.addPeer(p),
    removePeer: (k) => endpoint.removePeer(k),
    clock,
    maxPeers,
    lookup: (k) => new Promise((resolve, reject) => lookups.push({ key: keyToBase64(k), resolve, reject })),
    deliver: (d, rec) => got.push({ d, rec }),
    onHandshake: () => {},
    log: (_o, m) => logs.push(m),
  });
  closers.push(() => endpoint.close());
  /** A datagram from DERP key `src` as the hub endpoint's intake takes it: delivered when known, else held. */
  const fromSource = (src: Buffer, payload: Buffer): void => {
    const rec = dir.peerOf(src, payload);
    if (rec) got.push({ d: payload, rec });
  };
  return { device, dir, lookups, got, logs, fromSource };
}

function admitted(n: number): AdmittedPeer & { key: Buffer } {
  const key = generateKeyPair().publicKey;
  return {
    key,
    cluster: `edge-${n}`,
    publicKey: keyToBase64(key),
    address: `100.64.1.${n}`,
    presharedKey: keyToBase64(generatePresharedKey()),
  };
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe('PeerDirectory', () => {
  it('delivers datagrams of a known key at once, found by key, peer and cluster', () => {
    const r = rig();
    const a = admitted(2);
    expect(r.dir.add(a)).toBe(true);
    const rec = r.dir.get(a.publicKey);
    expect(rec?.peer).toBe(r.device.getPeer(a.key));
    expect(r.dir.forCluster('edge-2')).toBe(rec);
    expect(r.dir.forPeer(rec!.peer)).toBe(rec);
    const src = Buffer.from(a.key);
    r.fromSource(src, Buffer.from('one'));
    r.fromSource(src, Buffer.from('two'));
    expect(r.got.map((g) => [g.d.toString(), g.rec])).toEqual([
      ['one', rec],
      ['two', rec],
    ]);
    expect(r.lookups).toEqual([]);
  });

  it("holds a cluster's agent replicas as a set: each found by key, all by cluster, removed one by one", () => {
    const r = rig();
    const replicas = [admitted(3), admitted(4), admitted(5)].map((a) => ({ ...a, cluster: 'edge-set' }));
    for (const a of replicas) expect(r.dir.add(a)).toBe(true);
    expect(r.dir.agentsOf('edge-set').map((x) => x.address)).toEqual([
      '100.64.1.3',
      '100.64.1.4',
      '100.64.1.5',
    ]);
    expect(r.dir.forCluster('edge-set')?.publicKey).toBe(replicas[0]!.publicKey);
    r.dir.remove(replicas[0]!.publicKey);
    expect(r.dir.agentsOf('edge-set').map((x) => x.address)).toEqual(['100.64.1.4', '100.64.1.5']);
    expect(r.dir.forCluster('edge-set')?.publicKey).toBe(replicas[1]!.publicKey);
    r.dir.remove(replicas[1]!.publicKey);
    r.dir.remove(replicas[2]!.publicKey);
    expect(r.dir.agentsOf('edge-set')).toEqual([]);
    expect(r.dir.forCluster('edge-set')).toBeUndefined();
  });

  it('asks the store once about an unknown key, holds copies of at most MAX_PENDING_PER_KEY, then delivers them in order', async () => {
    const r = rig();
    const a = admitted(3);
    const sent: Buffer[] = [];
    for (let i = 0; i < MAX_PENDING_PER_KEY + 2; i++) {
      const d = Buffer.alloc(8, i);
      sent.push(Buffer.from(d));
      r.fromSource(Buffer.from(a.key), d);
      d.fill(0xff); // the sender's buffer is reused: the held datagram is a copy
    }
    expect(r.lookups.map((l) => l.key)).toEqual([a.publicKey]);
    expect(r.dir.pendingLookups).toBe(1);
    expect(r.dir.dropped.pendingOverflow).toBe(2);
    expect(r.got).toEqual([]);
    r.lookups[0]?.resolve(a);
    await settle();
    expect(r.dir.pendingLookups).toBe(0);
    const rec = r.dir.get(a.publicKey);
    expect(rec).toBeDefined();
    expect(r.got.map((g) => g.d)).toEqual(sent.slice(0, MAX_PENDING_PER_KEY));
    expect(r.got.every((g) => g.rec === rec)).toBe(true);
  });

  it('counts held datagrams as not admitted when the store refuses, answers another key, or fails', async () => {
    const r = rig();
    const [a, b, c] = [admitted(4), admitted(5), admitted(6)];
    for (const x of [a, b, c]) {
      r.fromSource(x.key, Buffer.from('init'));
      r.fromSource(x.key, Buffer.from('retry'));
    }
    r.lookups[0]?.resolve(null);
    r.lookups[1]?.resolve(c); // a record for another key is not taken for this one
    r.lookups[2]?.reject(new Error('store down'));
    await settle();
    expect(r.dir.dropped.notAdmitted).toBe(6);
    expect(r.dir.size).toBe(0);
    expect(r.got).toEqual([]);
    // Refused keys are asked about again on their next datagram.
    r.fromSource(a.key, Buffer.from('again'));
    expect(r.lookups.length).toBe(4);
  });

  it('runs at most MAX_PENDING_LOOKUPS lookups at once; datagrams of further unknown keys are dropped', async () => {
    const r = rig();
    const keys = Array.from({ length: MAX_PENDING_LOOKUPS + 3 }, () => generateKeyPair().publicKey);
    for (const k of keys) r.fromSource(k, Buffer.from('init'));
    expect(r.lookups.length).toBe(MAX_PENDING_LOOKUPS);
    expect(r.dir.pendingLookups).toBe(MAX_PENDING_LOOKUPS);
    expect(r.dir.dropped.lookupFull).toBe(3);
    r.lookups[0]?.resolve(null);
    await settle();
    r.fromSource(keys.at(-1)!, Buffer.from('init'));
    expect(r.lookups.length).toBe(MAX_PENDING_LOOKUPS + 1);
    expect(r.dir.dropped.lookupFull).toBe(3);
  });

  it('remove forgets held datagrams and the cached source; a later datagram from that key is looked up again', async () => {
    const r = rig();
    const [a, b] = [admitted(7), admitted(8)];
    r.fromSource(a.key, Buffer.from('held'));
    expect(r.dir.remove(a.publicKey)).toBe(false);
    r.lookups[0]?.resolve(a);
    await settle();
    expect(r.dir.get(a.publicKey)).toBeUndefined();
    expect(r.got).toEqual([]);

    r.dir.add(b);
    const src = Buffer.from(b.key);
    r.fromSource(src, Buffer.from('x'));
    expect(r.got.length).toBe(1);
    expect(r.dir.remove(b.key)).toBe(true);
    expect(r.device.getPeer(b.key)).toBeUndefined();
    expect(r.dir.forCluster('edge-8')).toBeUndefined();
    r.fromSource(src, Buffer.from('y'));
    expect(r.got.length).toBe(1);
    expect(r.lookups.map((l) => l.key)).toEqual([a.publicKey, b.publicKey]);
  });

  it('holds at most maxPeers agents; refuses unusable records without throwing; refreshes in place', () => {
    const r = rig(2);
    const [a, b, c] = [admitted(9), admitted(10), admitted(11)];
    expect(r.dir.add(a)).toBe(true);
    expect(r.dir.full).toBe(false);
    expect(r.dir.add(b)).toBe(true);
    expect(r.dir.full).toBe(true);
    expect(r.dir.add(c)).toBe(false);
    expect(r.logs).toEqual(['hub: agent not added']);
    expect(r.dir.add({ ...c, presharedKey: 'short' })).toBe(false);
    expect(r.dir.add({ ...c, address: '100.64.1.300' })).toBe(false);
    expect(r.logs.slice(1)).toEqual(['hub: agent record unusable', 'hub: agent record unusable']);
    const peer = r.dir.get(a.publicKey)?.peer;
    expect(r.dir.add(a)).toBe(true);
    expect(r.dir.get(a.publicKey)?.peer).toBe(peer);
    expect(r.dir.add({ ...a, address: '100.64.1.99' })).toBe(true);
    expect(r.dir.get(a.publicKey)?.peer).not.toBe(peer);
    expect(r.dir.size).toBe(2);
    r.dir.remove(b.publicKey);
    expect(r.dir.full).toBe(false);
    expect(r.dir.add(c)).toBe(true);
  });

  it('after close nothing is added, not even by a lookup that answers late', async () => {
    const r = rig();
    const [a, b] = [admitted(12), admitted(13)];
    r.fromSource(a.key, Buffer.from('held'));
    r.dir.close();
    r.lookups[0]?.resolve(a);
    await settle();
    expect(r.dir.size).toBe(0);
    expect(r.dir.add(b)).toBe(false);
    expect(r.got).toEqual([]);
    expect(r.dir.dropped.notAdmitted).toBe(0);
  });
});
