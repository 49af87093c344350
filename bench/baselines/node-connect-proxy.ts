/**
 * The floor of a CONNECT proxy written on Node's own TLS and HTTP: an https server in its own process that
 * checks the Proxy-Authorization bearer, dials the upstream over loopback TCP, answers 200 and splices the two
 * sockets (the bytes sent with the CONNECT go to the upstream first). No tunnel, no relay hop, no agent: what a
 * new connection costs any Node proxy on this machine, against which the relay and agent's cost is read.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSelfSignedCert } from '../../relay/ops/tls/self-signed.js';
import { firstLine, start } from '../tunnel-fixture.js';

const PROXY_SRC = `
const https = require('node:https');
const net = require('node:net');
const fs = require('node:fs');
const upPort = Number(process.env.UP_PORT);
const want = 'Bearer ' + fs.readFileSync(process.env.TOKEN_FILE, 'utf8');
const server = https.createServer({
  key: fs.readFileSync(process.env.KEY_FILE),
  cert: fs.readFileSync(process.env.CERT_FILE),
});
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
  /** The proxy's certificate (PEM), to trust. */
  ca: string;
  /** The bearer the proxy wants in Proxy-Authorization. */
  token: string;
  process: ChildProcess;
}

/** Starts the baseline proxy in a child process (files under `dir`), towards 127.0.0.1:`upPort`. */
export async function startNodeConnectProxy(dir: string, upPort: number): Promise<NodeConnectProxy> {
  const cert = createSelfSignedCert({ commonName: 'localhost', altNames: ['localhost'], now: Date.now() });
  const token = 'baseline-proxy-token';
  const files = { key: join(dir, 'baseline-proxy.key'), cert: join(dir, 'baseline-proxy.crt') };
  writeFileSync(files.key, cert.keyPem, { mode: 0o600 });
  chmodSync(files.key, 0o600);
  writeFileSync(files.cert, cert.certPem);
  const tokenFile = join(dir, 'baseline-proxy.token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  const env = {
    ...process.env,
    UP_PORT: String(upPort),
    KEY_FILE: files.key,
    CERT_FILE: files.cert,
    TOKEN_FILE: tokenFile,
  };
  const child = start(process.execPath, ['-e', PROXY_SRC], env);
  const port = Number(await firstLine(child));
  return { url: `https://127.0.0.1:${port}`, ca: cert.certPem, token, process: child };
}
