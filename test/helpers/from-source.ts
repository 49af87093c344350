/**
 * One HTTPS request to a relay from a chosen local address (Linux routes all of 127.0.0.0/8 to lo, so a
 * client may bind 127.0.0.2, 127.0.0.3, ... and the relay sees distinct sources). Trusts only the given
 * certificate; one connection per request; bounded in time.
 */
import { request } from 'node:https';

export interface FromSourceRequest {
  url: string;
  caPem: string;
  localAddress: string;
  method: string;
  path: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface FromSourceReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON fields
  body: any;
}

export function requestFrom(r: FromSourceRequest): Promise<FromSourceReply> {
  const target = new URL(r.path, r.url);
  const payload = r.body === undefined ? undefined : JSON.stringify(r.body);
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: r.method,
        ca: r.caPem,
        localAddress: r.localAddress,
        agent: false,
        timeout: r.timeoutMs ?? 10_000,
        headers: {
          ...(r.token ? { authorization: `Bearer ${r.token}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...r.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`${r.method} ${r.path} from ${r.localAddress}: timed out`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}
