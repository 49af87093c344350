/**
 * `tunnel-client egress` lists what the agent would really use with the relay's actual settings, through the real
 * binaries: the same rows before joining (asked from the relay, `GET /api/v1/network`) as after; UDP rows only for
 * ports the relay serves (a direct WireGuard row only with --udp-port on, a STUN row only with --stun-port on too).
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
  RELAY_BIN,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';

beforeAll(() => buildIfStale(), 180_000);
afterAll(cleanup);

interface Row {
  host: string;
  port: number;
  protocol: string;
  purpose: string;
}

async function egress(args: string[]): Promise<Row[]> {
  const r = await run(CLIENT_BIN, ['egress', '-o', 'json', ...args], cleanEnv());
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { destinations: Row[] }).destinations.map(
    ({ host, port, protocol, purpose }) => ({
      host,
      port,
      protocol,
      purpose,
    }),
  );
}

async function beforeAndAfter(
  udp: 'on' | 'off',
  stun: 'on' | 'off',
): Promise<{ before: Row[]; after: Row[]; ports: { udp: number; stun: number } }> {
  const ports = { udp: await freeUdpPort(), stun: await freeUdpPort() };
  const { proc, ready } = await startServe(join(tempDir('egress-ba-'), 'relay'), '127.0.0.1:0', [
    '--udp-port',
    udp === 'on' ? String(ports.udp) : 'off',
    '--stun-port',
    stun === 'on' ? String(ports.stun) : 'off',
  ]);
  try {
    const before = await egress(['--relay', ready.url, '--ca-pin', ready.caPin]);
    const text = await run(CLIENT_BIN, ['egress', '--relay', ready.url, '--ca-pin', ready.caPin], cleanEnv());
    const port = new URL(ready.url).port;
    expect(text.stdout).toContain(
      `firewall rules (${udp === 'on' ? (stun === 'on' ? 3 : 2) : 1}):\n  allow TCP 127.0.0.1:${port}: registration, values, lease, relay (DERP)\n`,
    );
    const created = await run(RELAY_BIN, ['cluster', 'create', 'edge-e', '-o', 'json'], adminEnvOf(ready));
    const stateDir = join(tempDir('egress-ba-agent-'), 's');
    const words = joinCommandWords(JSON.parse(created.stdout).bootstrap.joinCommand);
    const joined = await run(
      CLIENT_BIN,
      [...words, '--state-dir', stateDir, '--wait', '--upstream', 'http://127.0.0.1:9'],
      cleanEnv(),
      45_000,
    );
    expect(joined.code, joined.stderr).toBe(0);
    const after = await egress(['--state-dir', stateDir]);
    return { before, after, ports };
  } finally {
    await proc.stop();
  }
}

describe('egress before and after joining', () => {
  it('UDP and STUN served: the same rows, with STUN and direct WireGuard', async () => {
    const { before, after, ports } = await beforeAndAfter('on', 'on');
    expect(before).toEqual(after);
    expect(before.filter((r) => r.protocol === 'udp')).toEqual([
      { host: '127.0.0.1', port: ports.stun, protocol: 'udp', purpose: 'STUN' },
      { host: '127.0.0.1', port: ports.udp, protocol: 'udp', purpose: 'direct WireGuard' },
    ]);
  }, 90_000);

  it('UDP off: no UDP row at all (the agent does not STUN without a direct path), before as after', async () => {
    const { before, after } = await beforeAndAfter('off', 'on');
    expect(before).toEqual(after);
    expect(before.filter((r) => r.protocol === 'udp')).toEqual([]);
  }, 90_000);
});
