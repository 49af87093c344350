/**
 * The Kubernetes facts the agent reports as claims (tunnel-client/dialer/cluster-facts.ts), collected from the test
 * API server over real TLS with its CA and the service-account token: the version and the node count (one node
 * asked, the rest from remainingItemCount); a node list the account may not read, a hostile /version answer, an
 * oversized body and an API server that is down leave the claims out.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withKubeFacts } from '../shared/api/kube-facts.js';
import { collectFacts } from '../tunnel-client/dialer/cluster-facts.js';
import type { UpstreamTrust } from '../tunnel-client/dialer/upstream-trust.js';
import { VERSION } from './helpers/kube-api/resources.js';
import { type KubeApiServer, startKubeApiServer } from './helpers/kube-api/server.js';
import { makeCaSignedCert } from './helpers/test-cert.js';

let api: KubeApiServer;
let trust: UpstreamTrust;
const onChange = () => {};

beforeAll(async () => {
  const cert = makeCaSignedCert('DNS:localhost,IP:127.0.0.1');
  api = await startKubeApiServer({
    cert: cert.cert,
    key: cert.key,
    authz: {
      tokens: new Set(['sa-token-1']),
      serviceAccount: 'system:serviceaccount:tunnel-client:tunnel-client',
      impersonableGroups: new Set(),
      bindings: new Map(),
      serviceAccountRights: new Set(['list nodes']),
    },
  });
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'cluster-facts-')), 'token');
  writeFileSync(tokenFile, 'sa-token-1\n');
  trust = { ca: cert.caCert, insecure: false, tokenFile };
});

afterAll(async () => {
  await api?.close();
});

describe('the Kubernetes facts an agent reports', () => {
  it('are the version and the node count, read with one small node list', async () => {
    api.nodes = Array.from({ length: 1234 }, (_, i) => `node-${i}`);
    const facts = await collectFacts({ upstream: api.url, trust, onChange });
    expect(facts).toEqual({ 'kubernetes.version': VERSION.gitVersion, 'kubernetes.nodes': '1234' });
    const asked = api.seen.filter((r) => r.url.startsWith('/api/v1/nodes')).map((r) => r.url);
    expect(asked).toEqual(['/api/v1/nodes?limit=1']);
  });

  it('leave out the node count when the account may not list nodes, and a version that is not one', async () => {
    api.authz.serviceAccountRights = new Set();
    api.version = { gitVersion: 'v1.30.0<script>\u202e' };
    try {
      expect(await collectFacts({ upstream: api.url, trust, onChange })).toEqual({});
      const last = api.seen.filter((r) => r.url.startsWith('/api/v1/nodes')).at(-1);
      expect(last?.status).toBe(403);
    } finally {
      api.authz.serviceAccountRights = new Set(['list nodes']);
      api.version = VERSION;
    }
  });

  it('leave out an answer larger than the cap', async () => {
    api.version = { gitVersion: 'v1.30.0', padding: 'x'.repeat(300 * 1024) };
    try {
      const facts = await collectFacts({ upstream: api.url, trust, onChange });
      expect(facts['kubernetes.version']).toBeUndefined();
    } finally {
      api.version = VERSION;
    }
  });

  it('are absent when the API server does not answer, or its certificate is not trusted', async () => {
    expect(await collectFacts({ upstream: api.url, trust: { ...trust, ca: undefined }, onChange })).toEqual(
      {},
    );
    expect(await collectFacts({ upstream: 'https://127.0.0.1:1', trust, onChange })).toEqual({});
  });

  it('go over --claim values of the same key, within the 20-claim cap', () => {
    const claims = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v']));
    const facts = { 'kubernetes.version': 'v1.30.0', 'kubernetes.nodes': '3', other: 'x' };
    expect(Object.keys(withKubeFacts(claims, facts))).toHaveLength(20);
    expect(withKubeFacts({ 'kubernetes.version': 'mine', env: 'prod' }, facts)).toEqual({
      'kubernetes.version': 'v1.30.0',
      'kubernetes.nodes': '3',
      env: 'prod',
    });
  });
});
