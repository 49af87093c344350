import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../shared/clock.js';
import { decodeMappedAddress } from '../../../shared/net/stun/stun-codec.js';
import { type StunResponder, startStunResponder } from './stun-responder.js';

const binding = (): Buffer => {
  const m = Buffer.alloc(20);
  m.writeUInt16BE(0x0001, 0);
  m.writeUInt32BE(0x2112a442, 4);
  randomBytes(12).copy(m, 8);
  return m;
};

let responder: StunResponder | undefined;
afterEach(async () => {
  await responder?.close();
  responder = undefined;
});

/** Sends `n` requests from one socket and collects answers for `ms`. */
async function burst(type: 'udp4' | 'udp6', host: string, port: number, n: number, ms = 300) {
  const s = dgram.createSocket(type);
  await new Promise<void>((r) => s.bind(0, host, () => r()));
  const answers: Buffer[] = [];
  s.on('message', (m) => answers.push(m));
  for (let i = 0; i < n; i++) s.send(binding(), port, host);
  await new Promise((r) => setTimeout(r, ms));
  const own = s.address().port;
  s.close();
  return { answers, own };
}

describe('STUN responder', () => {
  it('caps answers per second across senders and counts the rest as rate; the next second answers again', async () => {
    const clock = new FakeClock();
    responder = await startStunResponder({ host: '127.0.0.1', port: 0, clock, maxAnswersPerSecond: 3 });
    const first = await burst('udp4', '127.0.0.1', responder.port, 5);
    expect(first.answers).toHaveLength(3);
    expect(responder.stats.dropped.rate).toBe(2);
    clock.advance(1000);
    const second = await burst('udp4', '127.0.0.1', responder.port, 1);
    expect(second.answers).toHaveLength(1);
    expect(decodeMappedAddress(second.answers[0] as Buffer)).toEqual({
      address: Buffer.from([127, 0, 0, 1]),
      port: second.own,
    });
    expect(responder.stats.answered).toBe(4);
  });

  it('answers over IPv6 with the 16-byte address', async () => {
    try {
      responder = await startStunResponder({ host: '::1', port: 0, clock: new FakeClock() });
    } catch (err) {
      // No IPv6 loopback on this machine: the error must say so precisely.
      expect(String(err)).toMatch(/stun-port: cannot bind udp ::1:0 \((EADDRNOTAVAIL|EAFNOSUPPORT)\)/);
      return;
    }
    const { answers, own } = await burst('udp6', '::1', responder.port, 1);
    expect(decodeMappedAddress(answers[0] as Buffer)).toEqual({
      address: Buffer.from('00000000000000000000000000000001', 'hex'),
      port: own,
    });
  });
});
