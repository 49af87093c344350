/**
 * The relay's STUN responder (`tunnel-relay serve --stun-port N`) against real clients: the Debian `stun` client
 * (stun-client 0.97, RFC 3489 NAT tests: the plain Binding test is answered with the client's own address and
 * port, the change-IP/port tests are not, since the relay has one address), a Tailscale-style RFC 5389 request
 * with SOFTWARE and FINGERPRINT, garbage datagrams that are dropped and counted without stopping answers, and a
 * busy port refused at start with BAD_CONFIG naming stun-port.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMappedAddress, STUN_BINDING_SUCCESS } from '../shared/net/stun/stun-codec.js';
import {
  buildIfStale,
  cleanEnv,
  cleanup,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';

const execFileP = promisify(execFile);

let relay: Proc;
let ready: ReadyLine;
let stunPort: number;

/** Sends `msg` from a fresh socket; resolves with the first answer, or null after `ms`. */
async function ask(msg: Buffer, ms = 1000): Promise<{ answer: Buffer | null; port: number }> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const port = s.address().port;
  try {
    const answer = await new Promise<Buffer | null>((resolve) => {
      const t = setTimeout(() => resolve(null), ms);
      s.once('message', (m) => {
        clearTimeout(t);
        resolve(m);
      });
      s.send(msg, stunPort, '127.0.0.1');
    });
    return { answer, port };
  } finally {
    s.close();
  }
}

/** RFC 5389 Binding request as Tailscale sends it: SOFTWARE "tailnode", then FINGERPRINT. */
function tailscaleRequest(): Buffer {
  const m = Buffer.alloc(20 + 12 + 8);
  m.writeUInt16BE(0x0001, 0);
  m.writeUInt16BE(20, 2);
  m.writeUInt32BE(0x2112a442, 4);
  randomBytes(12).copy(m, 8);
  m.writeUInt16BE(0x8022, 20);
  m.writeUInt16BE(8, 22);
  m.write('tailnode', 24, 'latin1');
  m.writeUInt16BE(0x8028, 32);
  m.writeUInt16BE(4, 34);
  m.writeUInt32BE((crc32(m.subarray(0, 32)) ^ 0x5354554e) >>> 0, 36);
  return m;
}

/** One sample of the relay's /metrics, read with curl (the relay's certificate is self-signed: -k). */
async function metric(name: string): Promise<number> {
  const { stdout } = await execFileP('curl', ['-sk', `${ready.url}/metrics`], { timeout: 10_000 });
  const line = stdout.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ').pop()) : Number.NaN;
}

beforeAll(async () => {
  buildIfStale();
  stunPort = await freeUdpPort();
  const started = await startServe(join(tempDir('stun-'), 'relay'), '127.0.0.1:0', [
    '--stun-port',
    String(stunPort),
  ]);
  relay = started.proc;
  ready = started.ready;
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

describe('STUN responder of tunnel-relay serve', () => {
  it('the Debian stun client gets its own address and port back; the change tests go unanswered', async () => {
    const r = await execFileP('stun', [`127.0.0.1:${stunPort}`, '-v'], { timeout: 20_000 }).catch(
      (e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
    );
    const out = `${r.stdout}${r.stderr}`;
    const opened = /Opened port (\d+)/.exec(out)?.[1];
    expect(opened, out).toBeDefined();
    expect(out).toContain(`MappedAddress = 127.0.0.1:${opened}`);
    expect(out).toContain('test I = 1');
    expect(out).toContain('test II = 0');
    expect(await metric('tunnel_relay_stun_dropped_total{reason="change-request"}')).toBeGreaterThan(0);
  }, 30_000);

  it('answers an RFC 5389 request with SOFTWARE and FINGERPRINT with XOR-MAPPED-ADDRESS and a FINGERPRINT', async () => {
    const req = tailscaleRequest();
    const { answer, port } = await ask(req);
    expect(answer).not.toBeNull();
    const res = answer as Buffer;
    expect(res.readUInt16BE(0)).toBe(STUN_BINDING_SUCCESS);
    expect(res.subarray(4, 20).equals(req.subarray(4, 20))).toBe(true);
    expect(decodeMappedAddress(res)).toEqual({ address: Buffer.from([127, 0, 0, 1]), port });
    const fp = res.length - 8;
    expect(res.readUInt16BE(fp)).toBe(0x8028);
    expect(res.readUInt32BE(fp + 4)).toBe((crc32(res.subarray(0, fp)) ^ 0x5354554e) >>> 0);
  });

  it('drops garbage without answering, counts it, and keeps answering', async () => {
    const before = await metric('tunnel_relay_stun_dropped_total{reason="not-stun"}');
    const s = dgram.createSocket('udp4');
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
    let answers = 0;
    s.on('message', () => {
      answers++;
    });
    // WireGuard-sized and random datagrams; the first byte 0xff (top two bits set) can never start STUN.
    const garbage = [
      Buffer.alloc(148),
      ...Array.from({ length: 99 }, () => randomBytes(20 + (randomBytes(1)[0] ?? 0))),
    ];
    for (const g of garbage) g[0] = 0xff;
    for (const g of garbage) s.send(g, stunPort, '127.0.0.1');
    const { answer } = await ask(tailscaleRequest());
    await new Promise((r) => setTimeout(r, 200));
    s.close();
    expect(answer).not.toBeNull();
    expect(answers).toBe(0);
    expect(await metric('tunnel_relay_stun_dropped_total{reason="not-stun"}')).toBe(before + garbage.length);
    expect(await metric('tunnel_relay_stun_answered_total')).toBeGreaterThanOrEqual(2);
  });

  it('a busy --stun-port stops serve with BAD_CONFIG naming stun-port and the port', async () => {
    const busy = dgram.createSocket('udp4');
    await new Promise<void>((r) => busy.bind(0, '127.0.0.1', () => r()));
    const port = busy.address().port;
    try {
      const r = await run(
        RELAY_BIN,
        [
          'serve',
          '--listen',
          '127.0.0.1:0',
          '--data-dir',
          join(tempDir('stun-busy-'), 'd'),
          '--stun-port',
          String(port),
        ],
        cleanEnv(),
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`BAD_CONFIG: stun-port: cannot bind udp 127.0.0.1:${port} (EADDRINUSE)`);
    } finally {
      busy.close();
    }
  });
});
