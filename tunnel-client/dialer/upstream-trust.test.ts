import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { upstreamTrust } from './upstream-trust.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The environment of a pod: the kubelet's two variables and a service-account dir with ca.crt and token. */
function pod(): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), 'sa-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n');
  writeFileSync(join(dir, 'token'), 'pod-token\n');
  return {
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    KUBERNETES_SERVICE_PORT: '6443',
    TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR: dir,
  };
}

describe('upstream trust in a pod', () => {
  it('uses the pod CA and token for the service URL, without re-routing it', () => {
    const env = pod();
    const t = upstreamTrust(env, 'https://10.96.0.1:6443');
    expect(t.tokenFile).toBe(join(env.TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR!, 'token'));
    expect(t.ca).toContain('BEGIN CERTIFICATE');
    expect(t.dial).toBeUndefined();
  });

  it('treats https://kubernetes.default.svc[:443] as the pod API server, dialed at its service address', () => {
    for (const up of [
      'https://kubernetes.default.svc',
      'https://kubernetes.default.svc:443',
      'https://KUBERNETES.default.svc.cluster.local/',
    ]) {
      const t = upstreamTrust(pod(), up);
      expect(t.tokenFile, up).toMatch(/token$/);
      expect(t.dial, up).toEqual({ host: '10.96.0.1', port: 6443 });
    }
  });

  it('sends no pod token to any other upstream, nor outside a pod', () => {
    expect(upstreamTrust(pod(), 'https://kube.example:443').tokenFile).toBeUndefined();
    expect(upstreamTrust(pod(), 'http://kubernetes.default.svc').tokenFile).toBeUndefined();
    const { KUBERNETES_SERVICE_HOST: _, ...noHost } = pod();
    expect(upstreamTrust(noHost, 'https://kubernetes.default.svc').tokenFile).toBeUndefined();
  });
});
