import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../shared/errors.js';
import { defaultStateDir, StateDir } from './state-dir.js';
import type { AgentState } from './types.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'state-'));
  dirs.push(d);
  return d;
}

const state: AgentState = {
  version: 1,
  relay: 'https://127.0.0.1:8443',
  cluster: 'edge-1',
  caPin: `sha256:${'ab'.repeat(32)}`,
  caFile: null,
  publicKey: 'x',
  agentVersion: '0.1.0',
  upstream: null,
  allow: [],
  claims: { a: 'b' },
  valuesFiles: [],
  status: 'Pending',
  tunnel: null,
  registeredAt: '2026-01-01T00:00:00.000Z',
};

const tunnel = {
  hubPublicKey: 'HUBKEYhubkeyHUBKEYhubkeyHUBKEYhubkeyHUBKEYx=',
  presharedKey: 'PSKpskPSKpskPSKpskPSKpskPSKpskPSKpskPSKpskx=',
  address: '100.64.0.2',
  hubAddress: '100.64.0.1',
  relayUrl: 'https://127.0.0.1:8443',
  derpUrl: 'wss://127.0.0.1:8443/derp',
  udpEndpoint: null,
};

describe('StateDir', () => {
  it('writes every file 0600 in a 0700 directory and reads them back', () => {
    const s = new StateDir(join(tmp(), 'nested', 'agent'));
    s.saveKeyAndCredential('KEY', 'tac_cred');
    s.saveState(state);
    expect(statSync(s.dir).mode & 0o777).toBe(0o700);
    for (const f of ['private.key', 'credential', 'state.json']) {
      expect(statSync(join(s.dir, f)).mode & 0o777, f).toBe(0o600);
    }
    expect(s.readPrivateKey()).toBe('KEY');
    expect(s.readCredential()).toBe('tac_cred');
    expect(s.readState()).toEqual(state);
    expect(readdirSync(s.dir).some((f) => f.endsWith('.tmp'))).toBe(false);
  });

  it('keeps the preshared key in preshared.key (0600), never in state.json', () => {
    const s = new StateDir(join(tmp(), 'agent'));
    const accepted: AgentState = { ...state, status: 'Accepted', tunnel };
    s.saveState(accepted);
    expect(readFileSync(s.path('presharedKey'), 'utf8')).toBe(`${tunnel.presharedKey}\n`);
    expect(statSync(s.path('presharedKey')).mode & 0o777).toBe(0o600);
    expect(readFileSync(s.path('state'), 'utf8')).not.toContain(tunnel.presharedKey);
    expect(s.readState()).toEqual(accepted);
    rmSync(s.path('presharedKey'));
    expect(() => s.readState()).toThrow(/no preshared.key in state directory/);
  });

  it('migrates a state.json of the old layout: the key moves to preshared.key, state.json is rewritten', () => {
    const s = new StateDir(join(tmp(), 'agent'));
    s.ensure();
    const accepted: AgentState = { ...state, status: 'Accepted', tunnel };
    writeFileSync(s.path('state'), JSON.stringify(accepted), { mode: 0o600 });
    expect(s.readState()).toEqual(accepted);
    expect(readFileSync(s.path('presharedKey'), 'utf8').trim()).toBe(tunnel.presharedKey);
    const rewritten = JSON.parse(readFileSync(s.path('state'), 'utf8'));
    expect(rewritten.tunnel).not.toHaveProperty('presharedKey');
    expect(rewritten.tunnel.hubPublicKey).toBe(tunnel.hubPublicKey);
    expect(s.readState()).toEqual(accepted);
  });

  it('sets a state file opened wider than 0600 back to 0600 and reports it', () => {
    const fixed: string[] = [];
    const s = new StateDir(join(tmp(), 'agent'), {
      onModeFixed: (f) => fixed.push(`${f.file} ${f.oldMode}`),
    });
    s.saveKeyAndCredential('KEY', 'tac_cred');
    chmodSync(s.path('credential'), 0o644);
    expect(s.readCredential()).toBe('tac_cred');
    expect(fixed).toEqual([`${s.path('credential')} 644`]);
    expect(statSync(s.path('credential')).mode & 0o777).toBe(0o600);
  });

  it('reports a missing registration as STATE_MISSING naming the directory', () => {
    const s = new StateDir(tmp());
    expect(s.hasRegistration()).toBe(false);
    try {
      s.readState();
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'STATE_MISSING')).toBe(true);
      expect((err as Error).message).toContain(s.dir);
    }
  });

  it('remove() deletes the files and the directory', () => {
    const s = new StateDir(join(tmp(), 'agent'));
    s.saveKeyAndCredential('KEY', 'tac_cred');
    s.saveState(state);
    s.remove();
    expect(() => statSync(s.dir)).toThrow();
  });

  it('defaults to $TUNNEL_CLIENT_STATE_DIR, else ~/.tunnel-client', () => {
    expect(defaultStateDir({ TUNNEL_CLIENT_STATE_DIR: '/x/y' })).toBe('/x/y');
    expect(defaultStateDir({})).toMatch(/\.tunnel-client$/);
  });
});

describe('StateDir.lock', () => {
  it('allows one holder, takes over a dead holder, and releases', () => {
    const s = new StateDir(join(tmp(), 'agent'));
    const release = s.lock(process.pid);
    expect(statSync(s.path('lock')).mode & 0o777).toBe(0o600);
    // Another live process (our parent) cannot take it while we hold it.
    const parent = process.ppid;
    try {
      s.lock(parent);
      expect.unreachable();
    } catch (err) {
      expect(isTunnelError(err, 'CONFLICT')).toBe(true);
      expect((err as Error).message).toContain(`pid ${process.pid}`);
    }
    release();
    expect(() => statSync(s.path('lock'))).toThrow();
    // A lock left by a pid that no longer exists is taken over.
    const releaseDead = s.lock(2 ** 22 + 12345);
    const mine = s.lock(process.pid);
    mine();
    releaseDead();
    expect(() => statSync(s.path('lock'))).toThrow();
  });
});
