import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../errors.js';
import { generateKeyPair, keyToBase64 } from '../../keys.js';
import { redactKeys, runWg } from './run.js';
import { checkIfname, wgSet, wgSetArgs } from './set.js';

describe('wg set argv', () => {
  const peer = generateKeyPair().publicKey;
  const peer2 = generateKeyPair().publicKey;

  it('builds the documented argument order, keys only as file paths', () => {
    const args = wgSetArgs(
      'wg0',
      {
        privateKey: generateKeyPair().privateKey,
        listenPort: 51820,
        peers: [
          {
            publicKey: peer,
            presharedKey: Buffer.alloc(32, 7),
            endpoint: '10.0.0.1:51820',
            allowedIps: ['10.99.0.2/32', 'fd00::/64'],
            persistentKeepalive: 25,
          },
          { publicKey: peer2, remove: true },
        ],
      },
      { privateKey: '/tmp/k', psks: ['/tmp/psk0', undefined] },
    );
    expect(args).toEqual([
      'set',
      'wg0',
      'private-key',
      '/tmp/k',
      'listen-port',
      '51820',
      'peer',
      keyToBase64(peer),
      'preshared-key',
      '/tmp/psk0',
      'endpoint',
      '10.0.0.1:51820',
      'persistent-keepalive',
      '25',
      'allowed-ips',
      '10.99.0.2/32,fd00::/64',
      'peer',
      keyToBase64(peer2),
      'remove',
    ]);
  });

  it('rejects bad values with BAD_INPUT before running anything', async () => {
    const bad = [
      () => checkIfname('-rf'),
      () => checkIfname('a-very-long-interface-name'),
      () => checkIfname('wg 0'),
      () => wgSetArgs('wg0', { listenPort: 70000 }, { psks: [] }),
      () => wgSetArgs('wg0', { peers: [{ publicKey: peer, endpoint: 'nohost' }] }, { psks: [] }),
      () => wgSetArgs('wg0', { peers: [{ publicKey: peer, allowedIps: ['10.0.0.0/33'] }] }, { psks: [] }),
      () => wgSetArgs('wg0', { peers: [{ publicKey: peer, persistentKeepalive: -1 }] }, { psks: [] }),
    ];
    for (const f of bad) expect(f).toThrow(expect.objectContaining({ code: 'BAD_INPUT' }));
    // wgSet validates first: with a bad port it must fail with BAD_INPUT, not WG_CLI_*.
    const err = await wgSet('wg0', { listenPort: -5 }, { wgPath: '/nonexistent/wg' }).catch(
      (e: unknown) => e,
    );
    expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
    // A bad namespace name is a rejected promise (not a synchronous throw), before anything runs.
    const p = runWg(['show'], { netns: '../etc', wgPath: '/nonexistent/wg' });
    await expect(p).rejects.toMatchObject({ code: 'BAD_INPUT' });
  });
});

describe('redactKeys', () => {
  it('removes base64 and hex keys and given secrets from quoted stderr', () => {
    const k = generateKeyPair().privateKey;
    const text = `bad key ${keyToBase64(k)} or ${k.toString('hex')} or secret-value-123`;
    const r = redactKeys(text, ['secret-value-123']);
    expect(r).toBe('bad key <redacted> or <redacted> or <redacted>');
  });
});
