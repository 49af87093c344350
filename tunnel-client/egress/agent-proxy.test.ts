import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isTunnelError } from '../../shared/errors.js';
import { StateDir } from '../agent/state-dir.js';
import { type AgentState, type AgentStatusFile, DISCONNECTED } from '../agent/types.js';
import { readProxyCa, settingsFromState } from './agent-proxy.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function stateDir(): StateDir {
  const d = mkdtempSync(join(tmpdir(), 'agent-proxy-'));
  dirs.push(d);
  return new StateDir(join(d, 'state'));
}

const state: AgentState = {
  version: 1,
  relay: 'https://relay.example:8443',
  cluster: 'edge-1',
  caPin: null,
  caFile: null,
  publicKey: 'x',
  agentVersion: '0.1.0',
  upstream: null,
  allow: [],
  claims: {},
  valuesFiles: [],
  status: 'Accepted',
  tunnel: null,
  registeredAt: '2026-01-01T00:00:00.000Z',
};

function withValues(dir: StateDir, values: Record<string, unknown>): void {
  const status: AgentStatusFile = {
    ...DISCONNECTED,
    pid: 1,
    updatedAt: '2026-01-01T00:00:00.000Z',
    cluster: 'edge-1',
    status: 'Accepted',
    leaseRenewedAt: null,
    failures: 0,
    lastError: null,
    valuesVersion: '1',
    values,
  };
  dir.writeStatus(status);
}

describe('settingsFromState', () => {
  it('saved --proxy > environment > the relay values of the last run', () => {
    const dir = stateDir();
    withValues(dir, { httpsProxy: 'http://values:3128', noProxy: 'internal.test' });
    const fromValues = settingsFromState(dir, state, {});
    expect(fromValues.https?.url.host).toBe('values:3128');
    expect(fromValues.https?.source).toBe('values');
    expect(fromValues.noProxy.matches('a.internal.test', 443)).toBe(true);
    const fromEnv = settingsFromState(dir, state, { HTTPS_PROXY: 'http://env:1' });
    expect(fromEnv.https?.source).toBe('environment');
    const saved = settingsFromState(
      dir,
      { ...state, proxy: 'http://saved:2' },
      { HTTPS_PROXY: 'http://env:1' },
    );
    expect(saved.https?.url.host).toBe('saved:2');
    const override = settingsFromState(
      dir,
      { ...state, proxy: 'http://saved:2' },
      {},
      { proxy: 'http://flag:3' },
    );
    expect(override.https?.url.host).toBe('flag:3');
  });

  it('no status file and no settings: direct', () => {
    expect(settingsFromState(stateDir(), state, {}).https).toBeNull();
  });

  it('readProxyCa names the file it cannot use', () => {
    const d = mkdtempSync(join(tmpdir(), 'agent-proxy-ca-'));
    dirs.push(d);
    const notPem = join(d, 'x.txt');
    writeFileSync(notPem, 'hello');
    for (const f of [join(d, 'missing.pem'), notPem]) {
      try {
        readProxyCa(f);
        expect.unreachable();
      } catch (err) {
        expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        expect((err as Error).message).toContain(`--proxy-ca-file '${f}'`);
      }
    }
  });
});
