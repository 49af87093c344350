/**
 * `tunnel-relay manifests` through the real binary: the rendered examples in deploy/kubernetes are
 * regenerated and must match byte for byte (UPDATE_EXAMPLES=1 rewrites them), every output passes the
 * Kubernetes schemas, and bad resource flags exit 2 naming the value.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanEnv, cleanup, RELAY_BIN, ROOT, run } from './cli-harness.js';
import { validateYamlStream } from './helpers/kubernetes-schema.js';

/** deploy/kubernetes/<file> and the command that renders it (also listed in deploy/kubernetes/README.md). */
const EXAMPLES: readonly { file: string; args: readonly string[] }[] = [
  { file: 'relay.yaml', args: ['manifests', 'relay', '--public-url', 'https://relay.example.com'] },
  {
    file: 'relay-postgres.yaml',
    args: [
      'manifests',
      'relay',
      '--public-url',
      'https://relay.example.com',
      '--store',
      'postgres',
      '--replicas',
      '3',
      '--tls-secret',
      'tunnel-relay-tls',
    ],
  },
  {
    file: 'agent.yaml',
    args: [
      'manifests',
      'agent',
      '--cluster',
      'edge-1',
      '--relay',
      'https://relay.example.com',
      '--resource-qos-class',
      'ResourceRequirement',
      '--resource-limits',
      'cpu=800m,memory=800Mi',
      '--resource-requests',
      'cpu=400m,memory=400Mi',
    ],
  },
];

beforeAll(() => buildIfStale(), 180_000);
afterAll(cleanup);

describe('tunnel-relay manifests', () => {
  it.each(EXAMPLES)(
    'regenerates deploy/kubernetes/$file exactly, and it passes the schemas',
    async ({ file, args }) => {
      const r = await run(RELAY_BIN, args, cleanEnv());
      // Without --psk, `manifests agent` says on stderr that the join Secret is still to be made.
      if (file === 'agent.yaml') {
        expect(r.stderr).toContain('note: no --psk, so no Secret tunnel-client-join was printed');
        expect(r.stderr).toContain(
          'kubectl create secret generic tunnel-client-join -n tunnel-system --from-literal=psk=tpsk_...',
        );
        expect(r.stderr).toContain('cluster rotate-psk edge-1');
      } else expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      validateYamlStream(r.stdout);
      const path = join(ROOT, 'deploy/kubernetes', file);
      if (process.env.UPDATE_EXAMPLES === '1') writeFileSync(path, r.stdout);
      expect(r.stdout).toBe(readFileSync(path, 'utf8'));
    },
  );

  it('puts the PSK from TUNNEL_CLIENT_PSK into the join Secret only', async () => {
    const r = await run(
      RELAY_BIN,
      ['manifests', 'agent', '--cluster', 'edge-2', '--relay', 'https://relay.example.com'],
      cleanEnv({ TUNNEL_CLIENT_PSK: 'tpsk_from_env' }),
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const docs = validateYamlStream(r.stdout);
    const secret = docs.find((d) => d.kind === 'Secret');
    expect(secret?.stringData).toEqual({ psk: 'tpsk_from_env' });
  });

  it.each([
    [['--resource-qos-class', 'Burstable'], '--resource-qos-class "Burstable" is not one of'],
    [
      ['--resource-qos-class', 'ResourceRequirement', '--resource-limits', 'cpu=8OOm'],
      '--resource-limits cpu "8OOm" is not a Kubernetes quantity',
    ],
    [
      ['--resource-qos-class', 'ResourceRequirement', '--resource-requests', 'memory=1GB'],
      '--resource-requests memory "1GB" is not a Kubernetes quantity',
    ],
    [['--resource-limits', 'cpu=1'], 'need --resource-qos-class ResourceRequirement (got Default)'],
    [['--resource-qos-class', 'BestEffort', '--resource-requests', 'cpu=1'], '(got BestEffort)'],
    [['--replicas', '2'], '--replicas 2 needs --store postgres'],
    [['--store', 'postgres', '--replicas', '2'], '--replicas 2 needs --tls-secret'],
    [['--udp-port', '0'], '--udp-port 0 is not valid here'],
    [
      ['--store', 'postgres', '--replicas', '3', '--tls-secret', 't', '--udp-public-endpoint', 'u.example:1'],
      '--udp-public-endpoint "u.example:1" with --replicas 3 names one address for every replica',
    ],
    [['--drain-grace', '-1'], '--drain-grace "-1" is not whole seconds from 1 to 3600'],
    [['--namespace', 'Bad_NS'], '--namespace "Bad_NS" is not a DNS-1123 label'],
  ])('refuses %j with exit 2 naming the value', async (flags, message) => {
    const r = await run(
      RELAY_BIN,
      ['manifests', 'relay', '--public-url', 'https://relay.example.com', ...flags],
      cleanEnv(),
    );
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
  });
});
