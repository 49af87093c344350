import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionGuard } from './http/connection-guard.js';
import { clientErrorAnswer } from './http-client-error.js';

let server: http.Server;
let port: number;

/** What Node's parser + the connection guard's clientError handler answer to raw request bytes. */
async function answer(
  bytes: string,
): Promise<{ status: number; body: { error: { code: string; message: string } } }> {
  const s = net.connect(port, '127.0.0.1');
  s.end(bytes);
  let text = '';
  s.on('data', (d: Buffer) => {
    text += d.toString();
  });
  await once(s, 'close');
  return { status: Number(text.split(' ')[1]), body: JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) };
}

beforeAll(async () => {
  server = http.createServer((_req, res) => res.end('reached'));
  const guard = new ConnectionGuard({
    limits: {
      headerTimeoutMs: 15_000,
      bodyTimeoutMs: 30_000,
      idleTimeoutMs: 90_000,
      maxConnections: 100,
      maxPendingPerSource: null,
    },
    log: { warn: () => {} },
  });
  server.on('clientError', (err: Error, socket) => guard.handleClientError(err, socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as net.AddressInfo).port;
});

afterAll(() => server.close());

describe('parser errors', () => {
  it('answers what the parser refuses about body framing with 400 BAD_FRAMING and its reason', async () => {
    const head = 'POST / HTTP/1.1\r\nHost: x\r\n';
    for (const framing of [
      'Content-Length: 3\r\nTransfer-Encoding: chunked',
      'Content-Length: 3\r\nContent-Length: 3',
      'Content-Length: 3, 3',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked',
    ]) {
      const a = await answer(`${head}${framing}\r\n\r\nabc`);
      expect({ framing, status: a.status, code: a.body.error.code }).toEqual({
        framing,
        status: 400,
        code: 'BAD_FRAMING',
      });
      expect(a.body.error.message).toMatch(
        /^request body framing refused: .*(Content-Length|Transfer-Encoding)/,
      );
    }
  });

  it('answers other parse errors in the same envelope', async () => {
    const a = await answer('NOT HTTP AT ALL\r\n\r\n');
    expect(a.status).toBe(400);
    expect(a.body.error.code).toBe('BAD_INPUT');
    expect(clientErrorAnswer('HPE_HEADER_OVERFLOW', 'x').status).toBe(431);
    expect(clientErrorAnswer('HPE_HEADER_OVERFLOW', 'x').error.code).toBe('HEADERS_TOO_LARGE');
    expect(clientErrorAnswer('ERR_HTTP_REQUEST_TIMEOUT', undefined).status).toBe(408);
    expect(clientErrorAnswer('ERR_HTTP_REQUEST_TIMEOUT', undefined).error.code).toBe('REQUEST_TIMEOUT');
  });
});
