/**
 * The iptables helpers do what they say inside a namespace: allowOnlyTcpTo lets exactly one TCP
 * destination out and drops UDP and other ports (with counters to prove it), and masquerade makes a
 * router namespace rewrite the source of traffic it forwards (a NAT for later path tests).
 */

import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allowOnlyTcpTo,
  cleanupAll,
  createNetns,
  execCommand,
  freeTestSubnet,
  linkNetns,
  masquerade,
  type Netns,
  requireIntegrationPrivileges,
} from './helpers/index.js';

// Inline client run inside a namespace with the same Node binary: "tcp HOST PORT" or "udp HOST PORT".
const CLIENT_JS = `
const [proto, host, port] = process.argv.slice(1);
if (proto === 'tcp') {
  const s = require('node:net').connect(Number(port), host, () => { s.end('hello'); });
  s.on('data', (d) => { console.log('reply ' + d); process.exit(0); });
  s.on('error', (e) => { console.log('error ' + e.code); process.exit(1); });
  setTimeout(() => { console.log('timeout'); process.exit(1); }, 1500);
} else {
  const u = require('node:dgram').createSocket('udp4');
  u.send('hello', Number(port), host, () => u.close());
}
`;

async function client(ns: Netns, proto: 'tcp' | 'udp', host: string, port: number): Promise<string> {
  try {
    return (
      await ns.exec(process.execPath, ['-e', CLIENT_JS, proto, host, String(port)], { timeoutMs: 5000 })
    ).stdout.trim();
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? '').trim();
  }
}

describe('iptables helpers', () => {
  let ns: Netns;
  const servers: { close(): void }[] = [];
  const seen: string[] = [];

  beforeAll(async () => {
    requireIntegrationPrivileges(['ip', 'iptables']);
    ns = await createNetns('hst-i', { subnet: 'auto' });
    for (const port of [18001, 18002]) {
      const srv = createServer((s: Socket) => {
        s.on('data', (d) => {
          seen.push(`tcp ${port} from ${s.remoteAddress}: ${d}`);
          s.end('ok');
        });
      });
      srv.listen(port, ns.hostAddress);
      await once(srv, 'listening');
      servers.push(srv);
    }
    const udp = createSocket('udp4');
    udp.on('message', (m, r) => seen.push(`udp from ${r.address}: ${m}`));
    udp.bind(18003, ns.hostAddress);
    await once(udp, 'listening');
    servers.push(udp);
  });

  afterAll(async () => {
    for (const s of servers) s.close();
    await cleanupAll();
  });

  it('allowOnlyTcpTo lets only that TCP destination out; the drop rule counts the rest', async () => {
    const host = ns.hostAddress!;
    // Before: everything gets through.
    expect(await client(ns, 'tcp', host, 18002)).toBe('reply ok');
    const { allow, drop } = await allowOnlyTcpTo(ns.name, host, 18001);
    expect(await client(ns, 'tcp', host, 18001)).toBe('reply ok');
    expect(await client(ns, 'tcp', host, 18002)).toMatch(/timeout|error/);
    seen.length = 0;
    await client(ns, 'udp', host, 18003);
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.filter((s) => s.startsWith('udp'))).toEqual([]);
    expect((await allow.counters()).packets).toBeGreaterThanOrEqual(1);
    // At least the SYN to 18002 and the UDP datagram were dropped.
    expect((await drop.counters()).packets).toBeGreaterThanOrEqual(2);
  });

  it('masquerade in a router namespace rewrites the source of forwarded traffic', async () => {
    // inner (I.2) -> router (I.1 | H.2) -> host (H.1); I is an unrouted subnet, H links to the host.
    const router = await createNetns('hst-r', { subnet: 'auto' });
    const inner = await createNetns('hst-n');
    const innerSubnet = await freeTestSubnet();
    const link = await linkNetns(router, inner, innerSubnet);
    await inner.exec('ip', ['route', 'add', 'default', 'via', link.aAddress]);
    await router.exec('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    const srv = createServer((s: Socket) => {
      s.on('data', (d) => {
        seen.push(`nat from ${s.remoteAddress}: ${d}`);
        s.end('ok');
      });
    });
    srv.listen(18004, router.hostAddress);
    await once(srv, 'listening');
    servers.push(srv);
    const nat = await masquerade(router.name, router.nsIf!);
    seen.length = 0;
    expect(await client(inner, 'tcp', router.hostAddress!, 18004)).toBe('reply ok');
    expect(seen).toEqual([`nat from ${router.nsAddress}: hello`]);
    expect((await nat.counters()).packets).toBeGreaterThanOrEqual(1);
    // The host itself has no route to the inner subnet: only NAT made this work.
    const routes = (await execCommand('ip', ['-4', 'route', 'show', 'root', innerSubnet])).stdout.trim();
    expect(routes).toBe('');
  });
});
