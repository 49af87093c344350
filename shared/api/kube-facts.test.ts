import { describe, expect, it } from 'vitest';
import { kubeFactsOf, kubernetesVersionOf, nodeCountOf } from './kube-facts.js';

describe('Kubernetes facts read from claims', () => {
  it('takes the versions clusters report', () => {
    for (const v of ['v1.30.2', 'v1.29.4+k3s1', 'v1.28.3-gke.1203001', 'v1.27.16-eks-a18cd3a', '1.31'])
      expect(kubernetesVersionOf(v), v).toBe(v);
  });

  it('refuses what is not a version: markup, control and bidi characters, over 64 characters', () => {
    for (const v of ['<b>v1.30</b>', 'v1.30.0\u202e', 'v1.30.0\n', 'latest', '', `v1.30.0-${'a'.repeat(60)}`])
      expect(kubernetesVersionOf(v), v).toBeNull();
  });

  it('takes a plain whole node count up to 1,000,000', () => {
    expect(nodeCountOf('0')).toBe(0);
    expect(nodeCountOf('5000')).toBe(5000);
    expect(nodeCountOf('1000000')).toBe(1_000_000);
    for (const n of ['-1', '1e3', '03', '3.0', ' 3', '1000001', '99999999999', '0x10'])
      expect(nodeCountOf(n), n).toBeNull();
  });

  it('gives null for facts absent from the claims', () => {
    expect(kubeFactsOf({ env: 'prod' })).toEqual({ kubernetesVersion: null, nodeCount: null });
  });
});
