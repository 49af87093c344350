/**
 * Every error the real `tunnel-relay serve` answers on its port is the envelope `{"error":{"code","message"}}`
 * with a code of shared/errors.ts and that code's status, including what never reaches a route: a path that is
 * not valid percent-encoding, headers over Node's limit, bytes that are not HTTP, a missing Host header, an
 * unsupported Expect header, a text/plain body, a refused /derp upgrade. Sent as raw bytes over TLS (and with
 * curl), as a client would.
 */
import tls from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../shared/errors.js';
import { abuseRuns } from './abuse/scale.js';
import {
  buildIfStale,
  cleanup,
  curl,
  type Proc,
  type ReadyLine,
  startServe,
  tempDir,
} from './cli-harness.js';

let relay: Proc;
let ready: ReadyLine;
let port: number;

beforeAll(async () => {
  buildIfStale();
  ({ proc: relay, ready } = await startServe(tempDir('envelope-'), '127.0.0.1:0', ['--header-timeout', '2']));
  port = Number(new URL(ready.url).port);
}, 120_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `bytes` over TLS, half-closes, and returns everything the relay sent until it closed. */
function raw(bytes: string | Buffer, ms = 6_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no close within ${ms} ms: ${Buffer.concat(chunks).toString()}`));
    }, ms);
    s.on('secureConnect', () => s.end(bytes));
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}

/** The first response in `text`. */
function firstReply(text: string): Reply {
  const end = text.indexOf('\r\n\r\n');
  expect(end, text).toBeGreaterThan(0);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? '');
  expect(m, statusLine).not.toBeNull();
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rest = text.slice(end + 4);
  const length = headers['content-length'];
  return {
    status: Number(m![1]),
    headers,
    body: length === undefined ? rest : rest.slice(0, Number(length)),
  };
}

/** Any error reply is the envelope with a known code whose status is the reply's; no 5xx. */
function expectEnvelope(r: Reply, code?: string): void {
  expect(r.status, r.body).toBeLessThan(500);
  if (r.status < 400) return;
  expect(r.headers['content-type'], r.body).toMatch(/^application\/json/);
  const parsed = JSON.parse(r.body) as { error: { code: keyof typeof ERROR_CODES; message: string } };
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message']);
  expect(ERROR_CODES[parsed.error.code]?.status, r.body).toBe(r.status);
  expect(parsed.error.message.length).toBeGreaterThan(0);
  if (code) expect(parsed.error.code).toBe(code);
}

const request = (head: string, body = '') => `${head}\r\n\r\n${body}`;

describe('one error envelope for everything the relay answers', () => {
  it('answers a bad URL, oversized headers, non-HTTP bytes, no Host, Expect, text/plain and /derp refusals with the envelope', async () => {
    const cases: Array<[string, string, number, string]> = [
      [
        'GET /% (not percent-encoding)',
        request('GET /% HTTP/1.1\r\nHost: r\r\nConnection: close'),
        400,
        'BAD_INPUT',
      ],
      [
        'headers over 16 KiB',
        request(`GET /healthz HTTP/1.1\r\nHost: r\r\nX-Big: ${'a'.repeat(20_000)}`),
        431,
        'HEADERS_TOO_LARGE',
      ],
      ['not HTTP', 'GARBAGE\r\n\r\n', 400, 'BAD_INPUT'],
      ['a bad header name', request('GET /healthz HTTP/1.1\r\nHost: r\r\nBad Header: x'), 400, 'BAD_INPUT'],
      ['no Host', request('GET /healthz HTTP/1.1\r\nConnection: close'), 400, 'BAD_INPUT'],
      ['Expect: foo', request('GET /healthz HTTP/1.1\r\nHost: r\r\nExpect: foo'), 417, 'EXPECTATION_FAILED'],
      [
        'text/plain body',
        request(
          'POST /api/v1/clusters HTTP/1.1\r\nHost: r\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 5',
          'hello',
        ),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      ['an unfinished head', 'GET /healthz HTTP/1.1\r\nHost: r\r\n', 400, 'BAD_INPUT'],
      [
        '/derp without a WebSocket upgrade',
        request('GET /derp HTTP/1.1\r\nHost: r\r\nConnection: Upgrade\r\nUpgrade: derp'),
        426,
        'UPGRADE_REQUIRED',
      ],
      [
        '/derp without the derp subprotocol',
        request(
          'GET /derp HTTP/1.1\r\nHost: r\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        ),
        400,
        'BAD_INPUT',
      ],
      [
        'a body framing the parser refuses after the head',
        request('POST /api/v1/clusters HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: gzip', 'xyz'),
        400,
        'BAD_FRAMING',
      ],
    ];
    for (const [what, bytes, status, code] of cases) {
      const r = firstReply(await raw(bytes));
      expect(r.status, what).toBe(status);
      expectEnvelope(r, code);
    }
  });

  it('curl sees the same for GET /% and oversized headers', async () => {
    const bad = await curl(['-sk', '--path-as-is', '-w', '\n%{http_code}', `${ready.url}/%`], 10_000);
    const [body, status] = bad.stdout.split('\n');
    expect(status).toBe('400');
    expect(JSON.parse(body!)).toEqual({
      error: { code: 'BAD_INPUT', message: 'path "/%" is not valid percent-encoding' },
    });
    const big = await curl(
      ['-sk', '-w', '\n%{http_code}', '-H', `X-Big: ${'b'.repeat(20_000)}`, `${ready.url}/healthz`],
      10_000,
    );
    const [bigBody, bigStatus] = big.stdout.split('\n');
    expect(bigStatus).toBe('431');
    expect(JSON.parse(bigBody!).error.code).toBe('HEADERS_TOO_LARGE');
  });

  it('property: arbitrary request heads and bodies never get a reply outside the envelope', async () => {
    const token = fc.stringMatching(/^[!-~]{0,12}$/);
    const method = fc.oneof(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
      token,
    );
    const path = fc.oneof(
      fc.constantFrom(
        '/healthz',
        '/api/v1/clusters',
        '/api/v1/clusters/x',
        '/%',
        '/api/v1/register',
        '/derp',
      ),
      fc.stringMatching(/^[!-~]{0,40}$/).map((s) => `/${s}`),
      fc.string({ maxLength: 40 }).map((s) => `/${s}`),
    );
    const header = fc.oneof(
      {
        arbitrary: fc.tuple(fc.stringMatching(/^[A-Za-z-]{1,12}$/), fc.stringMatching(/^[ -~]{0,30}$/)),
        weight: 4,
      },
      { arbitrary: fc.tuple(token, fc.string({ maxLength: 30 })), weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(
        method,
        path,
        fc.oneof(
          { arbitrary: fc.constant('HTTP/1.1'), weight: 4 },
          { arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 x', ''), weight: 1 },
        ),
        fc.array(header, { maxLength: 4 }),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', ''),
        fc.string({ maxLength: 60 }),
        async (m, p, version, headers, contentType, body) => {
          const lines = [`${m} ${p} ${version}`, 'Host: relay', 'Connection: close'];
          for (const [k, v] of headers) lines.push(`${k}: ${v}`);
          if (contentType) lines.push(`Content-Type: ${contentType}`);
          lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
          const text = await raw(`${lines.join('\r\n')}\r\n\r\n${body}`);
          // HEAD answers carry no body; every other reply is checked in full.
          if (text === '' || m === 'HEAD') return;
          expectEnvelope(firstReply(text));
        },
      ),
      { numRuns: abuseRuns(150) },
    );
  });
});
