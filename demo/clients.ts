/** The demo's HTTP clients: a request through CONNECT (TLS to the relay, then plain HTTP) and plain https. */
import https from 'node:https';
import tls from 'node:tls';

export interface Answer {
  status: number;
  body: string;
  ms: number;
}

/** GET `path` from `target` (host:port) through the relay's CONNECT proxy. */
export function getViaConnect(
  relayUrl: string,
  ca: string,
  key: string,
  target: string,
  path: string,
): Promise<Answer> {
  const u = new URL(relayUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: u.hostname, port: Number(u.port), ca, servername: 'localhost' });
    let buf = Buffer.alloc(0);
    let phase: 'connect' | 'http' = 'connect';
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (phase === 'connect') {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const status = buf.subarray(0, buf.indexOf('\r\n')).toString();
        if (!status.startsWith('HTTP/1.1 200')) {
          s.destroy();
          reject(new Error(`CONNECT refused: ${status} ${buf.subarray(end + 4).toString()}`));
          return;
        }
        buf = buf.subarray(end + 4);
        phase = 'http';
        s.write(`GET ${path} HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`);
      }
    });
    s.on('end', () => {
      const text = buf.toString();
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const status = Number(head.split(' ')[1]);
      resolve({ status, body: text.slice(head.length + 4), ms: performance.now() - started });
    });
    s.on('error', reject);
    s.once('secureConnect', () => {
      s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Bearer ${key}\r\n\r\n`);
    });
  });
}

/** GET `url` over https trusting `ca`, with an optional bearer token. */
export function httpsGet(url: string, ca: string | undefined, token?: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ca, agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
  });
}
