/**
 * The gate in a real in-process relay: a balancer (test/helpers/proxy-balancer.ts) from a trusted address writes
 * the PROXY header and the client's ClientHello in one write; the relay serves the request and logs the client the
 * header names. A LOCAL command keeps the balancer's address.
 */
import { request } from 'node:https';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type ProxyBalancer,
  proxyV1,
  proxyV2,
  proxyV2Local,
  startProxyBalancer,
} from '../../../test/helpers/proxy-balancer.js';
import { startTestRelay, type TestRelay } from '../../../test/helpers/test-relay.js';

const TRUSTED = '127.0.0.5';

function getFrom(port: number, caPem: string, localAddress: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, ca: caPem, localAddress, agent: false, timeout: 10_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

describe('PROXY protocol gate', () => {
  let t: TestRelay;
  const balancers: ProxyBalancer[] = [];

  beforeAll(async () => {
    t = await startTestRelay({ flags: { proxyProtocol: TRUSTED, logLevel: 'debug' } });
  });
  afterAll(async () => {
    for (const b of balancers) await b.close();
    await t?.cleanup();
  });

  async function through(header: Parameters<typeof startProxyBalancer>[0]['header']): Promise<number> {
    const b = await startProxyBalancer({
      relayPort: Number(new URL(t.relay.url).port),
      sourceAddress: TRUSTED,
      header,
    });
    balancers.push(b);
    return b.port;
  }

  it.each([
    ['version 2', proxyV2, '127.0.0.2', '/healthz?v2'],
    ['version 1', proxyV1, '127.0.0.3', '/healthz?v1'],
  ])(
    'serves a %s header sent with the ClientHello in one write, under the client it names',
    async (_v, build, from, path) => {
      const port = await through((client) => build(client.remoteAddress ?? '', client.remotePort ?? 0));
      expect(await getFrom(port, t.relay.caPem, from, path)).toBe(200);
      await vi.waitFor(() => expect(t.logs.text).toContain(`"url":"${path}","remoteAddress":"${from}"`));
    },
  );

  it('keeps the balancer address for a LOCAL command', async () => {
    const port = await through(() => proxyV2Local());
    expect(await getFrom(port, t.relay.caPem, '127.0.0.4', '/healthz?local')).toBe(200);
    await vi.waitFor(() =>
      expect(t.logs.text).toContain(`"url":"/healthz?local","remoteAddress":"${TRUSTED}"`),
    );
  });
});

describe('PROXY protocol gate with --plain-http', () => {
  it('reads the header and the request after it from one write', async () => {
    const t = await startTestRelay({
      flags: {
        proxyProtocol: TRUSTED,
        plainHttp: true,
        publicUrl: 'https://relay.example',
        logLevel: 'debug',
      },
    });
    try {
      const port = Number(new URL(t.relay.url).port);
      const answer = await new Promise<string>((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port, localAddress: TRUSTED });
        let out = '';
        const get = 'GET /healthz?plain HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n';
        s.on('connect', () => s.write(Buffer.concat([proxyV1('127.0.0.9', 5555), Buffer.from(get)])));
        s.on('data', (d: Buffer) => {
          out += d.toString('latin1');
        });
        s.on('close', () => resolve(out));
        s.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(t.logs.text).toContain('"url":"/healthz?plain","remoteAddress":"127.0.0.9"');
    } finally {
      await t.cleanup();
    }
  });
});
