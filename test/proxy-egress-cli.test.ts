/**
 * `tunnel-client egress` against a real relay (UDP WireGuard port and STUN on): the JSON shape, 443-only
 * lists TCP only, auto adds STUN (the relay's advertised responder, which answers --check) and direct
 * WireGuard, --check through tinyproxy is ok (exit 0) and the
 * proxy saw the tunnels, a wrong CA pin fails every TCP line (exit 1) with CA_PIN_MISMATCH, NO_PROXY
 * turns the proxy off for the relay.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  freeUdpPort,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';
import { cleanupAll } from './helpers/cleanup.js';
import { freePort, startTinyproxy, type Tinyproxy } from './helpers/tinyproxy.js';

interface Line {
  host: string;
  port: number;
  protocol: string;
  purpose: string;
  viaProxy: boolean;
  check?: string;
  reason?: string;
  mapped?: string;
}

let relay: Proc;
let ready: ReadyLine;
let relayPort: number;
let udpPort: number;
let stunPort: number;
let proxy: Tinyproxy;
let stateDir: string;
const WRONG_PIN = `sha256:${'ab'.repeat(32)}`;

const egress = (args: string[], env: Record<string, string> = {}) =>
  run(CLIENT_BIN, ['egress', ...args], cleanEnv(env), 40_000);

function parse(r: { code: number | null; stdout: string; stderr: string }): Line[] {
  const doc = JSON.parse(r.stdout) as {
    destinations: Line[];
    rules: Array<{ port: number; purposes: string[] }>;
  };
  // `check` (the verdict) only with --check.
  expect(Object.keys(doc).filter((k) => k !== 'check')).toEqual(['destinations', 'rules']);
  // The rules cover every destination: one per protocol, host and port.
  expect([...new Set(doc.rules.flatMap((rule) => rule.purposes))].sort()).toEqual(
    [...new Set(doc.destinations.map((d) => d.purpose))].sort(),
  );
  return doc.destinations;
}

beforeAll(async () => {
  buildIfStale();
  udpPort = await freePort();
  stunPort = await freeUdpPort();
  const started = await startServe(join(tempDir('egress-cli-'), 'relay'), '127.0.0.1:0', [
    '--udp-port',
    String(udpPort),
    '--stun-port',
    String(stunPort),
  ]);
  relay = started.proc;
  ready = started.ready;
  relayPort = Number(new URL(ready.url).port);
  proxy = await startTinyproxy({ connectPorts: [relayPort] });
  const adminEnv = adminEnvOf(ready);
  const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-1', '--output', 'json'], adminEnv);
  expect(created.code, created.stderr).toBe(0);
  const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
  stateDir = join(tempDir('egress-cli-agent-'), 'state');
  const j = await run(CLIENT_BIN, [...args, '--state-dir', stateDir, '--wait'], cleanEnv(), 40_000);
  expect(j.code, j.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await proxy?.stop();
  await cleanup();
  await cleanupAll();
});

describe('tunnel-client egress', () => {
  it('--output json lists every destination with exactly the documented keys (auto: STUN and direct WireGuard)', async () => {
    const r = await egress(['--state-dir', stateDir, '--output', 'json']);
    expect(r.code, r.stderr).toBe(0);
    const lines = parse(r);
    for (const l of lines)
      expect(Object.keys(l)).toEqual(['host', 'port', 'protocol', 'purpose', 'viaProxy']);
    expect(lines.map((l) => `${l.purpose} ${l.protocol} ${l.host}:${l.port} ${l.viaProxy}`)).toEqual([
      `registration tcp 127.0.0.1:${relayPort} false`,
      `values tcp 127.0.0.1:${relayPort} false`,
      `lease tcp 127.0.0.1:${relayPort} false`,
      `relay (DERP) tcp 127.0.0.1:${relayPort} false`,
      `STUN udp 127.0.0.1:${stunPort} false`,
      `direct WireGuard udp 127.0.0.1:${udpPort} false`,
    ]);
  });

  it('443-only lists only TCP destinations; with HTTPS_PROXY they go via the proxy, NO_PROXY exempts', async () => {
    const only = parse(
      await egress(['--state-dir', stateDir, '--egress', '443-only', '--output', 'json'], {
        HTTPS_PROXY: proxy.url(),
      }),
    );
    expect(only).toHaveLength(4);
    expect(only.every((l) => l.protocol === 'tcp' && l.viaProxy)).toBe(true);
    const exempt = parse(
      await egress(['--state-dir', stateDir, '--egress', '443-only', '--output', 'json'], {
        HTTPS_PROXY: proxy.url(),
        NO_PROXY: `localhost,127.0.0.0/8:${relayPort}`,
      }),
    );
    expect(exempt.every((l) => !l.viaProxy)).toBe(true);
  });

  it('--check through tinyproxy with the right pin: every TCP line ok, exit 0, the proxy carried them', async () => {
    const before = (proxy.log().match(/CONNECT 127\.0\.0\.1/g) ?? []).length;
    const r = await egress(['--state-dir', stateDir, '--egress', '443-only', '--check', '--output', 'json'], {
      HTTPS_PROXY: proxy.url(),
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const lines = parse(r);
    expect(lines.map((l) => l.check)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(lines.every((l) => l.viaProxy)).toBe(true);
    expect((proxy.log().match(/CONNECT 127\.0\.0\.1/g) ?? []).length - before).toBe(4);
  });

  it('--check with a wrong CA pin: every TCP line failed with CA_PIN_MISMATCH, exit 1 (through the proxy too)', async () => {
    for (const env of [{}, { HTTPS_PROXY: proxy.url() }] as Record<string, string>[]) {
      const r = await egress(
        ['--relay', ready.url, '--ca-pin', WRONG_PIN, '--egress', '443-only', '--check', '--output', 'json'],
        env,
      );
      expect(r.code).toBe(1);
      const lines = parse(r);
      expect(lines).toHaveLength(4);
      for (const l of lines) {
        expect(l.check).toBe('failed');
        expect(l.reason).toContain('CA_PIN_MISMATCH');
        expect(l.reason).toContain(WRONG_PIN);
        // One full sentence naming the destination and what it is for.
        expect(l.reason).toMatch(
          /^Cannot use 127\.0\.0\.1:\d+ \(tcp\) for (registration|values|lease|relay \(DERP\)): .+\.$/,
        );
      }
    }
  });

  it('--check in auto mode probes the STUN responder the relay advertises and leaves direct WireGuard unprobed', async () => {
    const r = await egress(['--relay', ready.url, '--ca-pin', ready.caPin, '--check', '--output', 'json']);
    const s = await egress(['--state-dir', stateDir, '--check', '--output', 'json']);
    // --relay without a matching state dir asks the relay: the same destinations as after joining.
    const rows = (x: typeof r) => parse(x).map((l) => `${l.host}:${l.port}/${l.protocol} ${l.purpose}`);
    expect(rows(r)).toEqual(rows(s));
    const lines = parse(s);
    const stun = lines.find((l) => l.purpose === 'STUN');
    // The relay advertises its STUN responder (--stun-port), which answers.
    expect(stun?.port).toBe(stunPort);
    expect(stun?.check, stun?.reason).toBe('ok');
    // No NAT on loopback: the relay saw the probe come from 127.0.0.1 and some port of ours.
    expect(stun?.mapped).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(lines.find((l) => l.purpose === 'direct WireGuard')?.check).toBeUndefined();
    expect(lines.filter((l) => l.protocol === 'tcp').every((l) => l.check === 'ok')).toBe(true);
    expect(s.code, s.stderr).toBe(0);
  });

  it('--check shows progress per destination with its timeout; only UDP failing is relay only, exit 0', async () => {
    const created = await run(
      RELAY_BIN,
      ['cluster', 'create', 'edge-udp', '--output', 'json'],
      adminEnvOf(ready),
    );
    expect(created.code, created.stderr).toBe(0);
    const args = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
    const silent = await freeUdpPort(); // nothing answers STUN there
    const dir = join(tempDir('egress-cli-udp-'), 'state');
    const j = await run(
      CLIENT_BIN,
      [...args, '--state-dir', dir, '--stun-server', `127.0.0.1:${silent}`, '--wait'],
      cleanEnv(),
      40_000,
    );
    expect(j.code, j.stderr).toBe(0);
    const r = await egress(['--state-dir', dir, '--check']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `checking 1/7 127.0.0.1:${relayPort} tcp, registration, timeout 10 s ... ok after`,
    );
    expect(r.stderr).toContain(`127.0.0.1:${silent} udp, STUN, timeout 3 s ... failed after`);
    expect(r.stderr).toContain('direct WireGuard, timeout 10 s ... not probed');
    expect(r.stdout).toContain('check: relay only (the UDP rows failed');
    const json = await egress(['--state-dir', dir, '--check', '--output', 'json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).check).toBe('relay only');
  }, 60_000);

  it('text output names the proxy without its password', async () => {
    const r = await egress(['--state-dir', stateDir, '--egress', '443-only'], {
      HTTPS_PROXY: 'http://bob:t0ps3cret@127.0.0.1:3128',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('proxy http://bob:***@127.0.0.1:3128');
    expect(r.stdout).not.toContain('t0ps3cret');
  });
});
