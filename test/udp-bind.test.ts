import { afterEach, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../shared/keys.js';
import { parseUdpEndpoint, UdpBind, udpEndpoint } from './helpers/udp-bind.js';
import { waitFor } from './helpers/wait.js';
import { A_ADDR, B_ADDR, udpFrom } from './helpers/wireguard-link.js';

const binds: UdpBind[] = [];
afterEach(async () => {
  for (const b of binds.splice(0)) await b.close();
});

describe('UdpBind', () => {
  it('endpoint keys: udp:host:port and udp:[v6]:port, validated', () => {
    expect(udpEndpoint('127.0.0.1', 51820).key).toBe('udp:127.0.0.1:51820');
    expect(udpEndpoint('::1', 9).key).toBe('udp:[::1]:9');
    expect(parseUdpEndpoint('udp:[::1]:9')).toMatchObject({ host: '::1', port: 9 });
    expect(parseUdpEndpoint('udp:10.0.0.1:5')).toMatchObject({ host: '10.0.0.1', port: 5 });
    for (const bad of ['udp:host:1', 'udp:1.2.3.4:0', 'udp:1.2.3.4:70000', 'tcp:1.2.3.4:5', 'udp:1.2.3.4']) {
      expect(() => parseUdpEndpoint(bad)).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    }
  });

  it('two devices handshake and exchange packets over real loopback UDP sockets', async () => {
    const ka = generateKeyPair();
    const kb = generateKeyPair();
    const gotB: Buffer[] = [];
    const gotA: Buffer[] = [];
    const a = await UdpBind.open({
      host: '127.0.0.1',
      privateKey: ka.privateKey,
      onPacket: (p) => gotA.push(Buffer.from(p)),
    });
    binds.push(a);
    const b = await UdpBind.open({
      host: '127.0.0.1',
      privateKey: kb.privateKey,
      onPacket: (p) => gotB.push(Buffer.from(p)),
    });
    binds.push(b);
    const pa = a.device.addPeer({
      publicKey: kb.publicKey,
      endpoint: a.to('127.0.0.1', b.port),
      allowedIps: [`${B_ADDR}/32`],
    });
    const pb = b.device.addPeer({ publicKey: ka.publicKey, allowedIps: [`${A_ADDR}/32`] });
    pa.send(udpFrom(A_ADDR, B_ADDR, 'over udp'));
    await waitFor(() => gotB.length === 1);
    expect(gotB[0]!.subarray(28).toString()).toBe('over udp');
    expect(pb.endpoint?.key).toBe(`udp:127.0.0.1:${a.port}`);
    pb.send(udpFrom(B_ADDR, A_ADDR, 'and back'));
    await waitFor(() => gotA.length === 1);
    expect(gotA[0]!.subarray(28).toString()).toBe('and back');
    // garbage on the socket is counted, not thrown
    a.transport.send(Buffer.from('garbage'), '127.0.0.1', b.port);
    await waitFor(() => b.device.stats.drops['bad-type'] === 1);
  });
});

describe('UdpBind over IPv6', () => {
  it('handshakes over ::1 and keys the roamed endpoint as udp:[::1]:port', async () => {
    const ka = generateKeyPair();
    const kb = generateKeyPair();
    const got: Buffer[] = [];
    const a = await UdpBind.open({ host: '::1', privateKey: ka.privateKey, onPacket: () => {} });
    binds.push(a);
    const b = await UdpBind.open({
      host: '::1',
      privateKey: kb.privateKey,
      onPacket: (p) => got.push(Buffer.from(p)),
    });
    binds.push(b);
    a.device.addPeer({
      publicKey: kb.publicKey,
      endpoint: a.to('::1', b.port),
      allowedIps: ['0.0.0.0/0'],
    });
    const pb = b.device.addPeer({ publicKey: ka.publicKey, allowedIps: [`${A_ADDR}/32`] });
    a.device.send(udpFrom(A_ADDR, B_ADDR, 'v6 outer'));
    await waitFor(() => got.length === 1);
    expect(pb.endpoint?.key).toBe(`udp:[::1]:${a.port}`);
  });
});
