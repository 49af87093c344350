/**
 * What the building blocks of a byte's trip through the tunnel cost on this machine, measured now, in
 * CPU seconds per GiB: a Node TCP connection over loopback and a Node TLS connection over loopback (writer
 * and reader in this process, so both sides' work, kernel included), and the WireGuard AEAD
 * (ChaCha20-Poly1305 through the engine's own defaultAead(): the OpenSSL addon where it was built, else
 * sodium-native; 64 KiB messages) seal and open. From these, a floor for the relay and
 * the agent together: what they would spend on one downloaded GiB if they did nothing but the I/O and
 * cryptography the design requires (agent: read the upstream, seal, TLS write; relay: TLS read, open, TLS
 * write to the client), taking half of a connection's cost for each of its two ends.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { defaultAead } from '../shared/net/wireguard/crypto/aead.js';

const GIB = 1024 ** 3;
const CHUNK = 64 * 1024;

export interface PrimitiveCosts {
  /** CPU s per GiB for a writer and a reader of one connection together. */
  tcpPair: number;
  tlsPair: number;
  /** CPU s per GiB of ChaCha20-Poly1305 (64 KiB messages). */
  seal: number;
  open: number;
  /** Estimated floor of relay + agent CPU s per downloaded GiB (see the header). */
  tunnelFloor: number;
}

function cpuSeconds(since: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1e6;
}

/** Sends `bytes` from a server socket to a client socket in this process; CPU s per GiB. */
async function pairCost(bytes: number, key?: { key: string; cert: string }): Promise<number> {
  const server = key
    ? tls.createServer({ key: key.key, cert: key.cert })
    : net.createServer({ noDelay: true });
  const conn = key ? 'secureConnection' : 'connection';
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const client = key
    ? tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false })
    : net.connect(port, '127.0.0.1');
  const [s] = (await once(server, conn)) as [net.Socket];
  const chunk = randomBytes(CHUNK);
  let got = 0;
  const done = new Promise<void>((resolve) => {
    client.on('data', (d: Buffer) => {
      got += d.length;
      if (got >= bytes) resolve();
    });
  });
  const t0 = process.cpuUsage();
  let sent = 0;
  const pump = (): void => {
    while (sent < bytes) {
      sent += CHUNK;
      if (!s.write(chunk)) {
        s.once('drain', pump);
        return;
      }
    }
  };
  pump();
  await done;
  const cpu = cpuSeconds(t0);
  client.destroy();
  s.destroy();
  server.close();
  return (cpu * GIB) / got;
}

function aeadCost(bytes: number): { seal: number; open: number } {
  const aead = defaultAead();
  const key = randomBytes(32);
  const nonce = Buffer.alloc(12);
  const msg = randomBytes(CHUNK);
  const boxed = Buffer.alloc(CHUNK + 16);
  const plain = Buffer.alloc(CHUNK);
  const n = Math.ceil(bytes / CHUNK);
  let t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    nonce.writeUInt32LE(i, 4);
    aead.seal(boxed, key, nonce, msg);
  }
  const seal = (cpuSeconds(t0) * GIB) / (n * CHUNK);
  t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    if (aead.open(plain, key, nonce, boxed) < 0) throw new Error('AEAD open failed');
  }
  const open = (cpuSeconds(t0) * GIB) / (n * CHUNK);
  return { seal, open };
}

/** Measures the primitives over `bytes` each; `tlsKey` is any key and certificate pair for the TLS server. */
export async function measurePrimitives(
  bytes: number,
  tlsKey: { key: string; cert: string },
): Promise<PrimitiveCosts> {
  const tcpPair = await pairCost(bytes);
  const tlsPair = await pairCost(bytes, tlsKey);
  const { seal, open } = aeadCost(bytes);
  const tunnelFloor = tcpPair / 2 + seal + tlsPair / 2 + (tlsPair / 2 + open + tlsPair / 2);
  return { tcpPair, tlsPair, seal, open, tunnelFloor };
}
