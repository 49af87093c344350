/**
 * The floor of a CONNECT proxy written on Node's own TLS and HTTP: an https server in its own process that
 * checks the Proxy-Authorization bearer, dials the upstream over loopback TCP, answers 200 and splices the two
 * sockets (the bytes sent with the CONNECT go to the upstream first). No tunnel, no relay hop, no agent: what a
 * new connection costs any Node proxy on this machine, against which the relay and agent's cost is read. The
 * same on plain http says what the TLS connection alone costs.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSelfSignedCert } from '../../relay/ops/tls/self-signed.js';
import { firstLine, start } from '../tunnel-fixture.js';

const PROXY_SRC = `
const net = require('node:net');
const fs = require('node:fs');
const upPort = Number(process.env.UP_PORT);
const want = 'Bearer ' + fs.readFileSync(process.env.TOKEN_FILE, 'utf8');
const server = process.env.KEY_FILE
  ? require('node:https').createServer({
      key: fs.readFileSync(process.env.KEY_FILE),
      cert: fs.readFileSync(process.env.CERT_FILE),
    })
  : require('node:http').createServer();
server.on('connect', (req, client, head) => {
  client.on('error', () => {});
  if (req.headers['proxy-authorization'] !== want) {
    client.end('HTTP/1.1 407 Proxy Authentication Required\\r\\ncontent-length: 0\\r\\n\\r\\n');
    return;
  }
  const up = net.connect(upPort, '127.0.0.1', () => {
    client.write('HTTP/1.1 200 Connection Established\\r\\n\\r\\n');
    if (head.length > 0) up.write(head);
    up.pipe(client);
    client.pipe(up);
  });
  up.on('error', () => client.destroy());
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

export interface NodeConnectProxy {
  url: string;
  /** The proxy's certificate (PEM), to trust; none on http. */
  ca: string | undefined;
  /** The bearer the proxy wants in Proxy-Authorization. */
  token: string;
  process: ChildProcess;
}

/**
 * Starts the baseline proxy in a child process (files under `dir`), towards 127.0.0.1:`upPort`: on https, or
 * with `plain` on http (what TLS adds to the floor).
 */
export async function startNodeConnectProxy(
  dir: string,
  upPort: number,
  o: { plain?: boolean } = {},
): Promise<NodeConnectProxy> {
  const name = o.plain ? 'baseline-proxy-plain' : 'baseline-proxy';
  const token = 'baseline-proxy-token';
  const tokenFile = join(dir, `${name}.token`);
  writeFileSync(tokenFile, token, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  const env: NodeJS.ProcessEnv = { ...process.env, UP_PORT: String(upPort), TOKEN_FILE: tokenFile };
  const cert = o.plain
    ? undefined
    : createSelfSignedCert({ commonName: 'localhost', altNames: ['localhost'], now: Date.now() });
  if (cert) {
    env.KEY_FILE = join(dir, `${name}.key`);
    env.CERT_FILE = join(dir, `${name}.crt`);
    writeFileSync(env.KEY_FILE, cert.keyPem, { mode: 0o600 });
    chmodSync(env.KEY_FILE, 0o600);
    writeFileSync(env.CERT_FILE, cert.certPem);
  }
  const child = start(process.execPath, ['-e', PROXY_SRC], env);
  const port = Number(await firstLine(child));
  const scheme = cert ? 'https' : 'http';
  return { url: `${scheme}://127.0.0.1:${port}`, ca: cert?.certPem, token, process: child };
}
