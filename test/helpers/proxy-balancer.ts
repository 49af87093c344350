/**
 * A minimal TCP balancer in the test process that speaks the PROXY protocol: it accepts a client on 127.0.0.1, and
 * once the client's first bytes (the TLS ClientHello) arrive, connects to the relay from `sourceAddress` and writes
 * the header and those bytes in ONE write, then pipes both ways. `header(client)` builds the header for a client
 * socket (proxyV1, proxyV2, proxyV2Local below).
 */
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';

const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

export function proxyV1(src: string, srcPort: number): Buffer {
  return Buffer.from(`PROXY TCP4 ${src} 127.0.0.1 ${srcPort} 443\r\n`, 'latin1');
}

/** A version 2 PROXY command over TCP/IPv4, with one TLV after the addresses. */
export function proxyV2(src: string, srcPort: number): Buffer {
  const head = Buffer.from([...SIGNATURE, 0x21, 0x11, 0x00, 12 + 5]);
  const body = Buffer.alloc(12 + 5);
  Buffer.from(src.split('.').map(Number)).copy(body, 0);
  Buffer.from([127, 0, 0, 1]).copy(body, 4);
  body.writeUInt16BE(srcPort, 8);
  body.writeUInt16BE(443, 10);
  Buffer.from([0x04, 0x00, 0x02, 0x6f, 0x6b]).copy(body, 12);
  return Buffer.concat([head, body]);
}

/** A version 2 LOCAL command (a balancer's own health check). */
export function proxyV2Local(): Buffer {
  return Buffer.from([...SIGNATURE, 0x20, 0x00, 0x00, 0x00]);
}

export interface ProxyBalancer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startProxyBalancer(o: {
  relayPort: number;
  sourceAddress: string;
  header: (client: Socket) => Buffer;
}): Promise<ProxyBalancer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once('data', (first: Buffer) => {
      client.pause();
      const upstream = createConnection({
        host: '127.0.0.1',
        port: o.relayPort,
        localAddress: o.sourceAddress,
      });
      sockets.add(upstream);
      upstream.once('connect', () => {
        upstream.write(Buffer.concat([o.header(client), first]));
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => client.destroy());
    });
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
