import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../keys.js';
import { connectDerp } from './client.js';

const keyPair = generateKeyPair();
const onPacket = () => {};

describe('connectDerp input checks', () => {
  it('refuses URLs that are not ws(s):// with BAD_INPUT naming the value', () => {
    for (const url of ['not a url', 'https://relay:8443/derp', 'ftp://x/derp']) {
      expect(() => connectDerp({ url, keyPair, onPacket })).toThrow(
        expect.objectContaining({ code: 'BAD_INPUT' }),
      );
    }
    expect(() => connectDerp({ url: 'https://relay:8443/derp', keyPair, onPacket })).toThrow(
      /https:\/\/relay:8443/,
    );
  });

  it('refuses a CA pin on ws:// and a malformed pin', () => {
    const pin = `sha256:${'ab'.repeat(32)}`;
    expect(() => connectDerp({ url: 'ws://127.0.0.1:1/derp', keyPair, onPacket, caPin: pin })).toThrow(
      /needs a wss/,
    );
    expect(() => connectDerp({ url: 'wss://127.0.0.1:1/derp', keyPair, onPacket, caPin: 'sha1:00' })).toThrow(
      expect.objectContaining({ code: 'BAD_INPUT' }),
    );
  });

  it('refuses a key pair that is not two 32-byte keys', () => {
    const bad = { privateKey: Buffer.alloc(31), publicKey: keyPair.publicKey };
    expect(() => connectDerp({ url: 'wss://127.0.0.1:1/derp', keyPair: bad, onPacket })).toThrow(
      expect.objectContaining({ code: 'KEY_INVALID' }),
    );
  });
});
