import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../control/model/auth.js';
import { isReadOnly, proxyToken, requireProxy } from '../../control/model/proxy-auth.js';
import { parseConnectTarget } from './connect-proxy.js';
import { forwardHeaders, parseProxyPath } from './path-proxy.js';

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);

describe('parseConnectTarget', () => {
  it('accepts <label>.clusters.local:<port> and nothing else', () => {
    fc.assert(
      fc.property(label, fc.integer({ min: 1, max: 65535 }), (name, port) => {
        expect(parseConnectTarget(`${name}.clusters.local:${port}`)).toEqual({ cluster: name, port });
        expect(parseConnectTarget(`${name.toUpperCase()}.CLUSTERS.local:${port}`)?.cluster).toBe(name);
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const r = parseConnectTarget(s);
        if (!r) return;
        expect(s.toLowerCase().startsWith(`${r.cluster}.clusters.local:`)).toBe(true);
        expect(Number(s.split(':')[1])).toBe(r.port);
      }),
    );
    for (const bad of [
      'x.clusters.local',
      'x.clusters.local:0',
      'x.clusters.local:70000',
      'x.example:80',
      '-x.clusters.local:1',
      'a.b.clusters.local:1',
    ])
      expect(parseConnectTarget(bad)).toBeNull();
  });
});

describe('parseProxyPath', () => {
  it('maps the proxy prefix away and keeps the rest and the query', () => {
    expect(parseProxyPath('/api/v1/clusters/c1/proxy')).toEqual({ cluster: 'c1', upstreamPath: '/' });
    expect(parseProxyPath('/api/v1/clusters/c1/proxy/')).toEqual({ cluster: 'c1', upstreamPath: '/' });
    expect(parseProxyPath('/api/v1/clusters/c1/proxy/api/v1/pods?watch=1')).toEqual({
      cluster: 'c1',
      upstreamPath: '/api/v1/pods?watch=1',
    });
    expect(parseProxyPath('/api/v1/clusters/c1/proxy?x=1')).toEqual({ cluster: 'c1', upstreamPath: '/?x=1' });
    expect(parseProxyPath('/api/v1/clusters/c1/proxyx')).toBeNull();
    expect(parseProxyPath('/api/v1/clusters/%E0/proxy/')).toBeNull();
    fc.assert(
      fc.property(label, fc.webPath(), fc.option(fc.webQueryParameters()), (name, path, q) => {
        const rest = path.startsWith('/') ? path : `/${path}`;
        const url = `/api/v1/clusters/${name}/proxy${rest}${q ? `?${q}` : ''}`;
        const r = parseProxyPath(url);
        expect(r?.cluster).toBe(name);
        expect(r?.upstreamPath).toBe(`${rest === '' ? '/' : rest}${q ? `?${q}` : ''}`);
      }),
    );
  });
});

describe('forwardHeaders', () => {
  it('drops hop-by-hop headers, the relay credential and headers named by Connection', () => {
    const out = forwardHeaders([
      'Host',
      'relay',
      'Authorization',
      'Bearer trk_x',
      'Connection',
      'keep-alive, X-Hop',
      'X-Hop',
      '1',
      'Accept',
      'application/json',
      'Transfer-Encoding',
      'chunked',
      'Upgrade',
      'websocket',
    ]);
    expect(out).toEqual(['Host', 'relay', 'Accept', 'application/json']);
  });
});

describe('proxy credentials and roles', () => {
  it('reads Bearer and Basic (key as password or user) from Proxy-Authorization', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^trk_[A-Za-z0-9_-]{1,43}$/),
        fc.stringMatching(/^[a-z]{0,8}$/),
        (key, user) => {
          expect(proxyToken({ 'proxy-authorization': `Bearer ${key}` })).toBe(key);
          const basic = Buffer.from(`${user}:${key}`).toString('base64');
          expect(proxyToken({ 'proxy-authorization': `Basic ${basic}` })).toBe(key);
          expect(
            proxyToken({ 'proxy-authorization': `Basic ${Buffer.from(`${key}:`).toString('base64')}` }),
          ).toBe(key);
        },
      ),
    );
    expect(proxyToken({})).toBeNull();
    expect(proxyToken({ 'proxy-authorization': 'Digest abc' })).toBeNull();
  });

  it('admin anywhere; group-editor in its group; viewer read-only path proxy; agents never', () => {
    const key = (
      role: string,
      group: string | null = null,
      clusterCreatedAt: number | null = null,
    ): Principal => ({ kind: 'key', id: 'k', role, group, expiresAt: null, clusterCreatedAt }) as Principal;
    const scoped = (role: string) => key(role, null, 1);
    expect(requireProxy(key('admin'), { name: 'c', group: 'g', createdAt: 1 }, 'connect')).toEqual(
      key('admin'),
    );
    expect(() =>
      requireProxy(key('group-editor:g', 'g'), { name: 'c', group: 'g', createdAt: 1 }, 'connect'),
    ).not.toThrow();
    expect(() =>
      requireProxy(key('group-editor:h', 'h'), { name: 'c', group: 'g', createdAt: 1 }, 'write'),
    ).toThrow(/group g/);
    expect(() => requireProxy(key('viewer'), { name: 'c', group: 'g', createdAt: 1 }, 'read')).not.toThrow();
    expect(() => requireProxy(key('viewer'), { name: 'c', group: 'g', createdAt: 1 }, 'connect')).toThrow(
      /viewer/,
    );
    expect(() => requireProxy(key('viewer'), { name: 'c', group: 'g', createdAt: 1 }, 'write')).toThrow();
    expect(() => requireProxy(key('bootstrap'), { name: 'c', group: 'g', createdAt: 1 }, 'read')).toThrow();
    const agent = { kind: 'agent', cluster: 'c', credentialId: 'x', status: 'Accepted' } as Principal;
    expect(() => requireProxy(agent, { name: 'c', group: 'g', createdAt: 1 }, 'read')).toThrow(/agent/);
    const edge = { name: 'edge-1', group: 'g', createdAt: 1 };
    expect(() => requireProxy(scoped('cluster-proxy:edge-1'), edge, 'write')).not.toThrow();
    expect(() => requireProxy(scoped('cluster-proxy:edge-1'), edge, 'connect')).toThrow(/cluster-proxy/);
    expect(() => requireProxy(scoped('cluster-proxy:edge-2'), edge, 'read')).toThrow(/cluster-proxy/);
    expect(() => requireProxy(scoped('cluster-proxy-read:edge-1'), edge, 'read')).not.toThrow();
    expect(() => requireProxy(scoped('cluster-proxy-read:edge-1'), edge, 'write')).toThrow(/read/);
    // A scoped key reaches the cluster it was minted for only: not a later cluster of the same name.
    const recreated = { ...edge, createdAt: 2 };
    expect(() => requireProxy(scoped('cluster-proxy:edge-1'), recreated, 'read')).toThrow(/cluster-proxy/);
    expect(() => requireProxy(scoped('cluster-proxy-read:edge-1'), recreated, 'read')).toThrow(
      /cluster-proxy/,
    );
    expect(() => requireProxy(key('cluster-proxy:edge-1'), edge, 'read')).toThrow(/cluster-proxy/);
    expect(isReadOnly('GET', false)).toBe(true);
    expect(isReadOnly('GET', true)).toBe(false);
    expect(isReadOnly('POST', false)).toBe(false);
  });
});
