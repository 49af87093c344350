/**
 * Self-test of the integration harness (test/helpers) and the wg CLI wrapper against the real
 * wireguard-go: two namespaces joined by a veth, each running wireguard-go configured through
 * shared/wg-cli; ping crosses the tunnel; `wg show dump` shows the handshake and traffic; iptables
 * counters see the packets and a UDP block stops the tunnel; everything is gone afterwards.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyToBase64 } from '../shared/keys.js';
import { type GeneratedKeyPair, generateKeyPair, generatePresharedKey } from '../shared/kit/wg-cli/keys.js';
import {
  addRule,
  blockUdpEgress,
  cleanupAll,
  createNetns,
  linkNetns,
  listNetns,
  type Netns,
  pendingCleanups,
  pidAlive,
  requireIntegrationPrivileges,
  spawnProcess,
  startWireguardGo,
  WG_UAPI_DIR,
  type WireguardGoHandle,
  waitFor,
} from './helpers/index.js';

describe('integration harness: two wireguard-go peers in namespaces', () => {
  let a: Netns;
  let b: Netns;
  let wa: WireguardGoHandle;
  let wb: WireguardGoHandle;
  let ka: GeneratedKeyPair;
  let kb: GeneratedKeyPair;

  beforeAll(async () => {
    requireIntegrationPrivileges();
    a = await createNetns('hst-a');
    b = await createNetns('hst-b');
    const link = await linkNetns(a, b, '10.201.31.0/24');
    ka = await generateKeyPair();
    kb = await generateKeyPair();
    expect(ka.source).toBe('wg');
    const psk = await generatePresharedKey();
    wa = await startWireguardGo(a, {
      privateKey: ka.privateKey,
      listenPort: 51801,
      address: '10.202.31.1/24',
      peers: [
        {
          publicKey: kb.publicKey,
          presharedKey: psk,
          endpoint: `${link.bAddress}:51802`,
          allowedIps: ['10.202.31.2/32'],
        },
      ],
    });
    wb = await startWireguardGo(b, {
      privateKey: kb.privateKey,
      listenPort: 51802,
      address: '10.202.31.2/24',
      peers: [
        {
          publicKey: ka.publicKey,
          presharedKey: psk,
          allowedIps: ['10.202.31.1/32'],
          persistentKeepalive: 25,
        },
      ],
    });
  });

  afterAll(cleanupAll);

  it('pings across the tunnel and wg show dump reports the handshake and traffic', async () => {
    const egress = await addRule(a.name, 'OUTPUT', ['-p', 'udp', '--dport', '51802'], 'ACCEPT');
    const { stdout } = await a.exec('ping', ['-c', '3', '-i', '0.2', '-W', '2', '10.202.31.2']);
    expect(stdout).toMatch(/3 received/);

    const da = await wa.wgShow();
    expect(da.iface.hasPrivateKey).toBe(true);
    expect(da.iface.listenPort).toBe(51801);
    expect(da.peers).toHaveLength(1);
    const pa = da.peers[0]!;
    expect(pa.hasPresharedKey).toBe(true);
    expect(pa.endpoint).toBe('10.201.31.2:51802');
    expect(pa.allowedIps).toEqual(['10.202.31.2/32']);
    expect(Math.abs(Date.now() / 1000 - pa.latestHandshake)).toBeLessThan(60);
    expect(pa.rxBytes).toBeGreaterThan(0);
    expect(pa.txBytes).toBeGreaterThan(0);
    expect(pa.persistentKeepalive).toBeNull();

    const db = await wb.wgShow();
    const pb = db.peers[0]!;
    expect(pb.persistentKeepalive).toBe(25);
    // b learned a's endpoint from the handshake.
    expect(pb.endpoint).toBe('10.201.31.1:51801');
    expect(pb.publicKey).toBe(keyToBase64(ka.publicKey));
    expect(da.iface.publicKey).toBe(keyToBase64(ka.publicKey));
    expect(pa.publicKey).toBe(keyToBase64(kb.publicKey));

    const c = await egress.counters();
    // Handshake initiation + at least 3 echo requests left a's namespace as WireGuard UDP.
    expect(c.packets).toBeGreaterThanOrEqual(4);
    expect(c.bytes).toBeGreaterThan(4 * 28);
    expect(wa.readLog()).toMatch(/Received handshake response|Receiving handshake response/);
  });

  it('a UDP egress block stops the tunnel, and its drop counter counts the packets', async () => {
    const block = await blockUdpEgress(a.name);
    await expect(a.exec('ping', ['-c', '2', '-i', '0.2', '-W', '1', '10.202.31.2'])).rejects.toThrow(
      /100% packet loss/,
    );
    expect((await block.counters()).packets).toBeGreaterThanOrEqual(2);
    await block.remove();
    const { stdout } = await a.exec('ping', ['-c', '1', '-W', '2', '10.202.31.2']);
    expect(stdout).toMatch(/1 received/);
  });

  it('tears everything down: processes, namespaces, UAPI sockets', async () => {
    const names = [a.name, b.name];
    const pids = [wa.pid, wb.pid];
    const socks = [wa.ifname, wb.ifname].map((i) => join(WG_UAPI_DIR, `${i}.sock`));
    expect(socks.every((s) => existsSync(s))).toBe(true);
    await cleanupAll();
    expect(pendingCleanups()).toBe(0);
    const left = await listNetns();
    expect(names.filter((n) => left.includes(n))).toEqual([]);
    await waitFor(() => pids.every((p) => !pidAlive(p)), 5000, 'wireguard-go to exit');
    expect(socks.filter((s) => existsSync(s))).toEqual([]);
  });
});

describe('integration harness: processes', () => {
  afterAll(cleanupAll);

  it('kills a process that outlives its timeout', async () => {
    requireIntegrationPrivileges(['sleep']);
    const p = spawnProcess('sleep', ['30'], { timeoutMs: 300 });
    const r = await p.exited;
    expect(r.signal).toBe('SIGKILL');
    expect(pidAlive(p.pid)).toBe(false);
  });

  it('stop() ends a process and the processes it started (its process group)', async () => {
    const p = spawnProcess('sh', ['-c', 'sleep 30 & echo $!; wait']);
    await waitFor(() => /^[0-9]+\n/.test(p.output()), 5000, 'child pid');
    const grandchild = Number(p.output().trim());
    expect(pidAlive(grandchild)).toBe(true);
    await p.stop(500);
    await waitFor(() => !pidAlive(grandchild), 5000, 'grandchild to die');
  });

  it('refuses a fixed subnet already routed on the host; "auto" picks distinct free ones', async () => {
    const first = await createNetns('hst-s', { subnet: 'auto' });
    const taken = first.hostAddress!.replace(/\.1$/, '.0/24');
    await expect(createNetns('hst-s', { subnet: taken })).rejects.toThrow(/already routed/);
    const second = await createNetns('hst-s', { subnet: 'auto' });
    expect(second.hostAddress).not.toBe(first.hostAddress);
    await first.destroy();
    await second.destroy();
    expect(await listNetns()).not.toContain(first.name);
  });

  it('destroying a namespace kills processes still running inside it', async () => {
    const ns = await createNetns('hst-p', { subnet: 'auto' });
    const p = ns.spawn('sleep', ['30']);
    await waitFor(
      async () => (await ns.exec('ip', ['-o', 'link'])).stdout.includes(ns.nsIf ?? '?'),
      5000,
      'veth',
    );
    const { stdout } = await ns.exec('ping', ['-c', '1', '-W', '2', ns.hostAddress!]);
    expect(stdout).toMatch(/1 received/);
    await ns.destroy();
    await p.exited;
    expect(await listNetns()).not.toContain(ns.name);
  });
});
