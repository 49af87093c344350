/**
 * One HTTPS GET to a relay with a bearer key, trusting the relay's CA; never throws: a transport error is status 0
 * with the error's message as the body. Bounded by `timeoutMs`.
 */
import { request } from 'node:https';

export interface HubReply {
  status: number;
  body: string;
}

export function hubGet(o: { url: string; ca: string; token: string; timeoutMs?: number }): Promise<HubReply> {
  return new Promise((resolve) => {
    const req = request(
      o.url,
      {
        ca: o.ca,
        agent: false,
        timeout: o.timeoutMs ?? 10_000,
        headers: { authorization: `Bearer ${o.token}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', (err) => resolve({ status: 0, body: err.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeoutMs ?? 10_000} ms`)));
    req.on('error', (err) => resolve({ status: 0, body: err.message }));
    req.end();
  });
}
