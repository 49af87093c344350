/**
 * The wg CLI wrapper against the real wireguard-tools binary and a real wireguard-go: key
 * generation agrees with tweetnacl, configuration round-trips through `wg show dump`, failures map
 * to WG_CLI_MISSING / WG_CLI_FAILED without leaking keys (the missing binary is real: a PATH
 * without wg).
 */
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTunnelError } from '../shared/errors.js';
import {
  keyToBase64,
  generateKeyPair as naclKeyPair,
  parseKey,
  publicKeyFromPrivate,
} from '../shared/keys.js';
import {
  generateKeyPair,
  generatePresharedKey,
  runWg,
  wgGenkey,
  wgGenpsk,
  wgPubkey,
  wgSet,
  wgShowDump,
} from '../shared/kit/wg-cli/index.js';
import {
  cleanupAll,
  createNetns,
  findExecutable,
  type Netns,
  requireIntegrationPrivileges,
  startWireguardGo,
  type WireguardGoHandle,
} from './helpers/index.js';

describe('wg CLI wrapper: keys', () => {
  beforeAll(() => requireIntegrationPrivileges(['wg']));

  it('wg pubkey of a tweetnacl private key equals the tweetnacl public key', async () => {
    for (let i = 0; i < 5; i++) {
      const kp = naclKeyPair();
      expect(keyToBase64(await wgPubkey(kp.privateKey))).toBe(keyToBase64(kp.publicKey));
    }
  });

  it('tweetnacl derives the same public key as wg for a wg genkey private key', async () => {
    for (let i = 0; i < 5; i++) {
      const priv = await wgGenkey();
      expect(priv[0]! & 7).toBe(0);
      expect(keyToBase64(publicKeyFromPrivate(priv))).toBe(keyToBase64(await wgPubkey(priv)));
    }
    const kp = await generateKeyPair();
    expect(kp.source).toBe('wg');
    expect(publicKeyFromPrivate(kp.privateKey).equals(kp.publicKey)).toBe(true);
    const a = await wgGenpsk();
    const b = await generatePresharedKey();
    expect(a.length).toBe(32);
    expect(a.equals(b)).toBe(false);
  });

  it('falls back to tweetnacl when wg is not on PATH, and reports WG_CLI_MISSING directly', async () => {
    const env = { PATH: '/nonexistent-dir-for-test' };
    const err = await wgGenkey({ env }).catch((e: unknown) => e);
    expect(isTunnelError(err, 'WG_CLI_MISSING')).toBe(true);
    expect((err as Error).message).toMatch(/not installed or not on PATH/);
    const kp = await generateKeyPair({ env });
    expect(kp.source).toBe('tweetnacl');
    expect(publicKeyFromPrivate(kp.privateKey).equals(kp.publicKey)).toBe(true);
    expect((await generatePresharedKey({ env })).length).toBe(32);
  });

  it('a bad key or failing command is WG_CLI_FAILED quoting stderr, never the key', async () => {
    const secret = `${keyToBase64(naclKeyPair().privateKey).slice(0, 40)}!!!=`;
    const err = await runWg(['pubkey'], {}, { input: `${secret}\n`, secrets: [secret] }).catch(
      (e: unknown) => e,
    );
    expect(isTunnelError(err, 'WG_CLI_FAILED')).toBe(true);
    expect((err as Error).message).toMatch(/Key is not the correct length or format/);
    expect((err as Error).message).not.toContain(secret.slice(0, 20));

    const priv = naclKeyPair().privateKey;
    const err2 = await wgSet('twgnosuch0', { privateKey: priv, listenPort: 1 }).catch((e: unknown) => e);
    expect(isTunnelError(err2, 'WG_CLI_FAILED')).toBe(true);
    expect((err2 as Error).message).toMatch(/twgnosuch0|interface/i);
    expect((err2 as Error).message).not.toContain(keyToBase64(priv));
    expect((err2 as Error).message).not.toContain(priv.toString('hex'));
  });
});

describe('wg CLI wrapper: against wireguard-go in a namespace', () => {
  let ns: Netns;
  let wgo: WireguardGoHandle;
  const me = naclKeyPair();
  const p1 = naclKeyPair();
  const p2 = naclKeyPair();

  beforeAll(async () => {
    requireIntegrationPrivileges();
    ns = await createNetns('hst-w');
    wgo = await startWireguardGo(ns, {
      privateKey: me.privateKey,
      listenPort: 51803,
      address: '10.202.33.1/24',
    });
  });
  afterAll(cleanupAll);

  it('sets, updates and removes peers; the dump reflects each step', async () => {
    let d = await wgShowDump(wgo.ifname, { netns: ns.name });
    expect(d.iface).toEqual({
      hasPrivateKey: true,
      publicKey: keyToBase64(me.publicKey),
      listenPort: 51803,
      fwmark: null,
    });
    expect(d.peers).toEqual([]);

    const psk = await generatePresharedKey();
    await wgSet(
      wgo.ifname,
      {
        listenPort: 51804,
        fwmark: 0x42,
        peers: [
          {
            publicKey: p1.publicKey,
            endpoint: '10.201.33.9:51820',
            allowedIps: ['10.202.33.2/32'],
            persistentKeepalive: 15,
          },
          { publicKey: p2.publicKey, presharedKey: psk, allowedIps: ['10.202.34.0/24', '10.202.35.0/24'] },
        ],
      },
      { netns: ns.name },
    );
    d = await wgShowDump(wgo.ifname, { netns: ns.name });
    expect(d.iface.listenPort).toBe(51804);
    expect(d.iface.fwmark).toBe(0x42);
    const byKey = new Map(d.peers.map((p) => [p.publicKey, p]));
    expect(byKey.get(keyToBase64(p1.publicKey))).toMatchObject({
      endpoint: '10.201.33.9:51820',
      allowedIps: ['10.202.33.2/32'],
      persistentKeepalive: 15,
      hasPresharedKey: false,
      latestHandshake: 0,
    });
    expect(byKey.get(keyToBase64(p2.publicKey))).toMatchObject({ hasPresharedKey: true, endpoint: null });
    expect([...(byKey.get(keyToBase64(p2.publicKey))?.allowedIps ?? [])].sort()).toEqual([
      '10.202.34.0/24',
      '10.202.35.0/24',
    ]);

    // The preshared key really reached wireguard-go (read back via the UAPI-backed `wg show`).
    const { stdout } = await ns.exec('wg', ['show', wgo.ifname, 'preshared-keys']);
    expect(stdout).toContain(keyToBase64(psk));

    await wgSet(
      wgo.ifname,
      {
        peers: [
          { publicKey: p1.publicKey, remove: true },
          { publicKey: p2.publicKey, allowedIps: [] },
        ],
      },
      { netns: ns.name },
    );
    d = await wgShowDump(wgo.ifname, { netns: ns.name });
    expect(d.peers.map((p) => p.publicKey)).toEqual([keyToBase64(p2.publicKey)]);
    expect(d.peers[0]!.allowedIps).toEqual([]);
  });

  it('reports WG_CLI_MISSING when wg is missing inside `ip netns exec` (PATH holding only ip)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'onlyip-'));
    try {
      await symlink(findExecutable('ip')!, join(dir, 'ip'));
      const err = await wgShowDump(wgo.ifname, { netns: ns.name, env: { PATH: dir } }).catch(
        (e: unknown) => e,
      );
      expect(isTunnelError(err, 'WG_CLI_MISSING')).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a key generated by wg is accepted by wireguard-go as the interface key', async () => {
    const priv = await wgGenkey();
    await wgSet(wgo.ifname, { privateKey: priv }, { netns: ns.name });
    const d = await wgShowDump(wgo.ifname, { netns: ns.name });
    expect(parseKey(d.iface.publicKey ?? '').equals(publicKeyFromPrivate(priv))).toBe(true);
  });
});
