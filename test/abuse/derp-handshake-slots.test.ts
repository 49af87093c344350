/**
 * Replay of the /derp handshake-slot exhaustion (security issue #14): upgrades that never send ClientInfo, from one
 * source and then from many loopback sources (127.0.B.C), against the real `tunnel-relay serve` (its default
 * per-source cap, a smaller table). One source is capped at its share; the whole table fills and overflows, and new
 * upgrades push the oldest silent ones out instead of being refused; with the table full, the registered agent's key
 * still gets its session (not 503), and the real agent comes up. The counters on /metrics match what happened.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_DERP_LIMITS } from '../../relay/data/derp/limits.js';
import { parseKey, publicKeyFromPrivate } from '../../shared/keys.js';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import { connectDerp, type DerpClient } from '../../shared/net/derp/client.js';
import type { DerpStateEvent } from '../../shared/net/derp/client-options.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
  waitConnected,
} from '../cli-harness.js';
import { loopbackSources, type PendingUpgrade, UpgradeFlood } from './pending-upgrades.js';
import { abuseScale } from './scale.js';

const { maxHandshakingPerSource } = DEFAULT_DERP_LIMITS;
/**
 * The table size the relay runs with (`--derp-max-handshakes`): small enough that the flood fills it well within
 * the 10 s handshake timeout on a busy machine, so no slot frees itself by timing out during the test.
 */
const maxHandshaking = 512;
const scale = abuseScale();

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminEnv: NodeJS.ProcessEnv;
let stateDir: string;
let flood: UpgradeFlood;
let agent: Proc | undefined;
let derp: DerpClient | undefined;

beforeAll(async () => {
  buildIfStale();
  dataDir = join(tempDir('derp-slots-'), 'relay');
  ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0', [
    '--log-level',
    'warn',
    '--derp-max-handshakes',
    String(maxHandshaking),
  ]));
  adminEnv = adminEnvOf(ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-1', '--output', 'json'], adminEnv);
  expect(created.code, created.stderr).toBe(0);
  const joinArgs = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  stateDir = join(tempDir('derp-slots-agent-'), 'state');
  const joined = await run(CLIENT_BIN, [...joinArgs, '--state-dir', stateDir, '--wait'], cleanEnv(), 40_000);
  expect(joined.code, joined.stderr).toBe(0);
  const url = new URL(ready.url);
  flood = new UpgradeFlood({ host: url.hostname, port: Number(url.port), tls: true });
}, 120_000);

afterAll(async () => {
  derp?.close();
  flood?.destroyAll();
  await agent?.stop();
  await relay?.stop();
  await cleanup();
});

/** A /metrics sample, read with curl against the relay's own certificate. */
async function metric(name: string): Promise<number> {
  const r = await curl(['-sS', '-f', '--cacert', join(dataDir, 'tls', 'cert.pem'), `${ready.url}/metrics`]);
  expect(r.code, r.stderr).toBe(0);
  const line = r.stdout.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`${name} not exported`);
  return Number(line.slice(name.length + 1));
}

const refused = (reason: string) => metric(`tunnel_relay_derp_refused_total{reason="${reason}"}`);
/** How many upgrades got each HTTP status. */
function statuses(ups: readonly PendingUpgrade[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const u of ups) counts[u.status] = (counts[u.status] ?? 0) + 1;
  return counts;
}

/** The first outcome of a DERP connection with the registered agent's key: 'connected', or why it failed. */
function agentKeyAttempt(): Promise<DerpStateEvent> {
  const privateKey = parseKey(readFileSync(join(stateDir, 'private.key'), 'utf8').trim());
  const tunnel = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')).tunnel;
  return new Promise((resolve) => {
    derp = connectDerp({
      url: tunnel.derpUrl,
      caPin: ready.caPin,
      keyPair: { privateKey, publicKey: publicKeyFromPrivate(privateKey) },
      onPacket: () => {},
      onState: (e) => {
        if (e.state !== 'connecting') resolve(e);
      },
    });
  });
}

describe('/derp handshake slots under a flood of silent upgrades', () => {
  it('caps one source, evicts the oldest silent upgrades when full, and still admits the agent', async () => {
    // One source: its share of the table, then 429 for the rest.
    const extraFromOne = 8 * scale;
    const one = await flood.open(new Array(maxHandshakingPerSource + extraFromOne).fill('127.0.0.2'));
    expect(statuses(one)).toEqual({ 101: maxHandshakingPerSource, 429: extraFromOne });
    expect(await refused('source_limit')).toBe(extraFromOne);

    // Many sources, each under its cap: the table fills, then every further upgrade is still taken (101) and the
    // oldest silent ones are cut, first the single source's.
    const overflow = 64 * scale;
    const perSource = maxHandshakingPerSource / 2;
    const sources = Math.ceil((maxHandshaking - maxHandshakingPerSource + overflow) / perSource);
    const many = await flood.open(loopbackSources({ count: sources, perSource, firstB: 1 }));
    expect(statuses(many)).toEqual({ 101: many.length });
    const evicted = maxHandshakingPerSource + many.length - maxHandshaking;
    expect(evicted).toBeGreaterThanOrEqual(overflow);
    expect(await refused('evicted')).toBe(evicted);
    expect(await refused('full')).toBe(0);
    expect(await metric('tunnel_relay_derp_handshaking')).toBe(maxHandshaking);
    const taken = [...one.filter((u) => u.status === 101), ...many];
    await expect.poll(() => taken.filter((u) => u.closed()).length, { timeout: 5_000 }).toBe(evicted);
    // The single source's upgrades all came before the others: the oldest, so the first cut.
    expect(one.filter((u) => u.status === 101 && !u.closed())).toEqual([]);

    // The table is full of silent upgrades: the registered agent's key proves itself and gets its session.
    const first = await agentKeyAttempt();
    expect(first.error?.message ?? '', 'the agent key was refused').toBe('');
    expect(first.state).toBe('connected');
    expect(await refused('evicted')).toBe(evicted + 1);
    derp?.close();
    derp = undefined;

    // The real agent process comes up with the table full again.
    const topUp = await flood.open(loopbackSources({ count: 8, perSource: 8, firstB: 100 }));
    expect(statuses(topUp)).toEqual({ 101: topUp.length });
    expect(await metric('tunnel_relay_derp_handshaking')).toBe(maxHandshaking);
    agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    await waitConnected(adminEnv, 'edge-1', 20_000);
  }, 90_000);

  it('lifts the per-source cap behind --plain-http, where every connection comes from the terminator', async () => {
    const { proc, ready: plain } = await startServe(
      join(tempDir('derp-slots-plain-'), 'relay'),
      '127.0.0.1:0',
      [
        '--plain-http',
        '--public-url',
        'https://relay.example.com',
        '--log-level',
        'warn',
        '--derp-max-handshakes',
        String(maxHandshaking),
      ],
    );
    const url = new URL(plain.url);
    const terminator = new UpgradeFlood({ host: url.hostname, port: Number(url.port), tls: false });
    try {
      const n = 4 * maxHandshakingPerSource * scale;
      const ups = await terminator.open(new Array(n).fill('127.0.0.3'));
      expect(statuses(ups)).toEqual({ 101: n });
    } finally {
      terminator.destroyAll();
      await proc.stop();
    }
  }, 60_000);
});
