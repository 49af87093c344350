/**
 * Self-test of the NAT topologies (test/helpers/nat-topology.ts) with the STUN responder the relay runs
 * (`tunnel-relay serve --stun-port`) and a second responder as another destination: from the agent's
 * namespace, a STUN request reports the agent router's outside address, never the agent's own; plain MASQUERADE
 * keeps the source port for both destinations, `--random-fully` maps one socket to different ports per
 * destination; a router that drops UDP lets no STUN answer through while TCP (the relay's HTTPS) still works; and
 * with the hub behind its own MASQUERADE the agent reaches the hub's forwarded port at the hub router's address.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StunResponder, startStunResponder } from '../relay/data/stun/stun-responder.js';
import { realClock } from '../shared/clock.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { buildIfStale, cleanup, freeUdpPort, RELAY_BIN, startServe, tempDir } from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { createDoubleNatTopology, createNatTopology, type NatTopology } from './helpers/nat-topology.js';
import { requireIntegrationPrivileges } from './helpers/privileges.js';
import { stunProbe } from './helpers/stun-probe.js';

beforeAll(() => {
  requireIntegrationPrivileges(['ip', 'iptables', 'sysctl', 'curl', 'ping']);
  buildIfStale();
});

afterAll(async () => {
  await cleanup();
  await cleanupAll();
});

/** The relay (STUN on) and a second STUN responder on the hub's address; the two destinations of a probe. */
async function stunTargets(t: NatTopology) {
  const relayStun = await freeUdpPort(t.hubPublicAddress);
  const served = await startServe(tempDir('nat-relay-'), `${t.hubPublicAddress}:0`, [
    '--stun-port',
    String(relayStun),
  ]);
  const second: StunResponder = await startStunResponder({
    host: t.hubPublicAddress,
    port: 0,
    clock: realClock,
  });
  return {
    served,
    second,
    targets: [
      { host: t.hubPublicAddress, port: relayStun },
      { host: t.hubPublicAddress, port: second.port },
    ],
  };
}

const hostOf = (mapped: string | null | undefined) => mapped?.slice(0, mapped.lastIndexOf(':'));
const portOf = (mapped: string | null | undefined) => Number(mapped?.slice(mapped.lastIndexOf(':') + 1));

describe('NAT topologies', () => {
  it('MASQUERADE: the router address, the source port kept, the same mapping to both destinations', async () => {
    const t = await createNatTopology({ nat: 'masquerade' });
    const s = await stunTargets(t);
    try {
      const localPort = 40_000 + (process.pid % 20_000);
      const mapped = await stunProbe(t.agent, { targets: s.targets, localPort });
      expect(mapped).toEqual([
        `${t.agentPublicAddress}:${localPort}`,
        `${t.agentPublicAddress}:${localPort}`,
      ]);
      expect(t.agentPublicAddress).not.toBe(t.agentAddress);
    } finally {
      await s.second.close();
      s.served.proc.child.kill('SIGTERM');
      await t.destroy();
    }
  }, 40_000);

  it('MASQUERADE --random-fully: one socket gets a different mapped port per destination', async () => {
    const t = await createNatTopology({ nat: 'random-fully' });
    const s = await stunTargets(t);
    try {
      const mapped = await stunProbe(t.agent, { targets: s.targets });
      expect(mapped.map(hostOf)).toEqual([t.agentPublicAddress, t.agentPublicAddress]);
      expect(portOf(mapped[0])).not.toBe(portOf(mapped[1]));
    } finally {
      await s.second.close();
      s.served.proc.child.kill('SIGTERM');
      await t.destroy();
    }
  }, 40_000);

  it('a router that drops UDP: no STUN answer, while TCP to the relay still works', async () => {
    const t = await createNatTopology({ nat: 'drop-udp' });
    const s = await stunTargets(t);
    try {
      expect(await stunProbe(t.agent, { targets: s.targets, timeoutMs: 1_000 })).toEqual([null, null]);
      const port = new URL(s.served.ready.url).port;
      const r = await t.agent.exec('curl', [
        '-sS',
        '-k',
        '-m',
        '5',
        `https://${t.hubPublicAddress}:${port}/healthz`,
      ]);
      expect(r.stdout).toMatch(/ok/i);
    } finally {
      await s.second.close();
      s.served.proc.child.kill('SIGTERM');
      await t.destroy();
    }
  }, 40_000);

  it('the hub behind its own MASQUERADE: its forwarded STUN port answers at the hub router address', async () => {
    const stunPort = 3478;
    const t = await createDoubleNatTopology({ nat: 'masquerade', forward: { udp: [stunPort], tcp: [] } });
    const dataDir = mkdtempSync(join(tmpdir(), 'nat-hub-'));
    const relay = t.hub.spawn(process.execPath, [
      ...NODE_FLAGS,
      RELAY_BIN,
      'serve',
      '--listen',
      '0.0.0.0:8443',
      '--data-dir',
      dataDir,
      '--udp-port',
      'off',
      '--stun-port',
      String(stunPort),
    ]);
    try {
      const target = [{ host: t.hubPublicAddress, port: stunPort }];
      let mapped: Array<string | null> = [null];
      for (let i = 0; i < 20 && mapped[0] === null; i++) {
        mapped = await stunProbe(t.agent, { targets: target, timeoutMs: 500 });
      }
      expect(hostOf(mapped[0])).toBe(t.agentPublicAddress);
      // Out of the hub, MASQUERADE: inet has no route back to the hub's LAN, so a reply means translation.
      const ping = await t.hub.exec('ping', ['-c', '1', '-W', '2', t.inetAddress], { timeoutMs: 10_000 });
      expect(ping.stdout).toMatch(/1 received/);
    } finally {
      await relay.stop();
      await t.destroy();
    }
  }, 60_000);
});
