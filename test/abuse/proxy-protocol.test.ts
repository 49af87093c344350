/**
 * Attack replay against the real `tunnel-relay serve --proxy-protocol 127.0.0.5`: a client that is not a trusted
 * balancer sends a PROXY header naming another address (it is not believed: the bytes reach TLS and fail there),
 * and the trusted peer sends garbage, over-long headers of both versions, and a header that never completes.
 * Each such connection is closed (at once, or when the header timeout ends) and counted by reason on /metrics,
 * while other clients, direct and through the balancer, are served throughout.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFrom } from '../helpers/from-source.js';
import { type ProxyBalancer, proxyV1, proxyV2, startProxyBalancer } from '../helpers/proxy-balancer.js';
import { serveForFile } from '../helpers/served-relay.js';
import { abuseRuns, abuseScale } from './scale.js';

const BALANCER = '127.0.0.5';
const HEADER_TIMEOUT_S = 1;
const relay = serveForFile({
  prefix: 'abuse-proxy-protocol',
  args: ['--proxy-protocol', BALANCER, '--header-timeout', String(HEADER_TIMEOUT_S), '--log-level', 'debug'],
});
const relayPort = (): number => Number(new URL(relay.ready.url).port);

let balancer: ProxyBalancer;
beforeAll(async () => {
  balancer = await startProxyBalancer({
    relayPort: relayPort(),
    sourceAddress: BALANCER,
    header: (client) => proxyV2(client.remoteAddress ?? '', client.remotePort ?? 0),
  });
});
afterAll(async () => {
  await balancer?.close();
});

/** Opens a raw TCP connection from `from`, writes `bytes`; resolves with how long the relay took to close it. */
function closedAfter(from: string, bytes: Buffer, limitMs = 5_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect({ host: '127.0.0.1', port: relayPort(), localAddress: from });
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the relay kept the connection open over ${limitMs} ms`));
    }, limitMs);
    socket.on('connect', () => socket.write(bytes));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(guard);
      resolve(Date.now() - started);
    });
  });
}

async function healthzFrom(from: string, url = relay.ready.url): Promise<number> {
  const r = await requestFrom({
    url,
    caPem: relay.caPem,
    localAddress: from,
    method: 'GET',
    path: '/healthz',
  });
  return r.status;
}

async function refusedCounts(): Promise<Record<string, number>> {
  const r = await requestFrom({
    url: relay.ready.url,
    caPem: relay.caPem,
    localAddress: '127.0.0.1',
    method: 'GET',
    path: '/metrics',
  });
  const out: Record<string, number> = {};
  for (const m of String(r.body).matchAll(
    /tunnel_relay_proxy_protocol_refused_total\{reason="(\w+)"\} (\d+)/g,
  )) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

describe('PROXY protocol abuse', () => {
  it('does not believe a header from a peer that is not listed: it fails TLS like any garbage', async () => {
    const runs = 3 * abuseScale();
    for (let i = 0; i < runs; i++) {
      const header = i % 2 === 0 ? proxyV1('127.0.0.77', 1000 + i) : proxyV2('127.0.0.77', 1000 + i);
      const outcome = await new Promise<string>((resolve) => {
        const raw = connect({ host: '127.0.0.1', port: relayPort(), localAddress: '127.0.0.3' });
        raw.on('connect', () => {
          raw.write(header);
          const tls = tlsConnect({ socket: raw, ca: relay.caPem, checkServerIdentity: () => undefined });
          tls.on('secureConnect', () => resolve('handshake done'));
          tls.on('error', () => resolve('refused'));
          tls.on('close', () => resolve('refused'));
        });
        raw.on('error', () => resolve('refused'));
      });
      expect(outcome).toBe('refused');
    }
    // The same client without a header is served as always.
    expect(await healthzFrom('127.0.0.3')).toBe(200);
    expect(relay.proc.stderr).not.toContain('127.0.0.77');
  }, 30_000);

  it('closes a trusted peer that sends garbage, over-long or never-ending headers, serving everyone else', async () => {
    const before = await refusedCounts();
    const oversizedV2 = Buffer.from('0d0a0d0a000d0a515549540a2111ea60', 'hex');
    const attacks: Array<Promise<number>> = [
      closedAfter(BALANCER, Buffer.from(`PROXY TCP4 ${'1'.repeat(200)}`)),
      closedAfter(BALANCER, oversizedV2),
      closedAfter(BALANCER, Buffer.from('PROXY TCP4 192.0.2.1 192.0.2.2 1 2\n')),
      closedAfter(BALANCER, Buffer.from('160301002e010000', 'hex')),
    ];
    const slow = closedAfter(BALANCER, Buffer.from('PROXY TCP4 '));
    const garbage = fc.sample(fc.uint8Array({ minLength: 1, maxLength: 600 }), abuseRuns(20));
    attacks.push(...garbage.map((bytes) => closedAfter(BALANCER, Buffer.from(bytes))));
    // Served while the attack runs: a direct client, and a client through the balancer.
    expect(await healthzFrom('127.0.0.3')).toBe(200);
    expect(await healthzFrom('127.0.0.4', `https://127.0.0.1:${balancer.port}`)).toBe(200);
    for (const ms of await Promise.all(attacks)) expect(ms).toBeLessThan(HEADER_TIMEOUT_S * 1000 + 3_000);
    const slowMs = await slow;
    expect(slowMs).toBeGreaterThanOrEqual(HEADER_TIMEOUT_S * 1000 - 100);
    const after = await refusedCounts();
    for (const reason of ['missing', 'malformed', 'too_long', 'timeout']) {
      expect(after[reason], reason).toBeGreaterThan(before[reason] ?? 0);
    }
    expect(relay.proc.stderr).toContain('"remoteAddress":"127.0.0.4"');
  }, 60_000);
});
