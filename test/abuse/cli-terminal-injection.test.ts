/**
 * Replay of terminal injection through CLI output (security issue #14): an agent registers (a crafted request with
 * its PSK, as a hostile agent would send it) with claims and an agent version holding ESC[2J, OSC 8 and OSC 52
 * sequences, C1 CSI and U+202E; the cluster's display name and a values key hold the same. The real
 * `tunnel-relay` binary prints `cluster get`, `cluster list`, `values get` and `audit`, as text and as JSON: no raw
 * control, bidi or format character reaches stdout or stderr, the JSON still parses to exactly the stored strings,
 * and the text shows them as visible escapes. `tunnel-client`'s error line does the same with what it quotes.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../shared/keys.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  type RunResult,
  run,
  startServe,
  tempDir,
} from '../cli-harness.js';

/** ESC[2J (clear screen), an OSC 8 hyperlink, an OSC 52 clipboard write, a C1 CSI, DEL and a right-to-left override. */
const NASTY = 'v\x1b[2J\x1b]8;;https://e.x\x07L\x1b]8;;\x07\x1b]52;c;aGk=\x07\x9b1m\x7f\u202egpj.exe';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminEnv: NodeJS.ProcessEnv;

/** Code points a terminal acts on or hides (checked one by one, independently of the escaping module). */
function rawDangerous(text: string): string[] {
  const bad = (cp: number) =>
    (cp < 0x20 && cp !== 0x0a) ||
    (cp >= 0x7f && cp <= 0x9f) ||
    cp === 0x061c ||
    cp === 0x200e ||
    cp === 0x200f ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069);
  return [...text]
    .filter((c) => bad(c.codePointAt(0) ?? 0))
    .map((c) => `U+${(c.codePointAt(0) ?? 0).toString(16)}`);
}

async function api(method: string, path: string, token: string, body: unknown): Promise<unknown> {
  const r = await curl([
    '-sS',
    '--cacert',
    join(dataDir, 'tls', 'cert.pem'),
    '-X',
    method,
    '-H',
    `Authorization: Bearer ${token}`,
    '-H',
    'Content-Type: application/json',
    '--data-binary',
    JSON.stringify(body),
    `${ready.url}${path}`,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  buildIfStale();
  dataDir = join(tempDir('cli-escape-'), 'relay');
  ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
  adminEnv = adminEnvOf(ready);
  const created = await run(
    RELAY_BIN,
    ['cluster', 'create', 'edge-1', '--display-name', NASTY, '--output', 'json'],
    adminEnv,
  );
  expect(created.code, created.stderr).toBe(0);
  const psk = JSON.parse(created.stdout).bootstrap.psk as string;
  const registered = await api('POST', '/api/v1/register', psk, {
    cluster: 'edge-1',
    publicKey: generateKeyPair().publicKey.toString('base64'),
    agentVersion: NASTY,
    claims: { 'id.k8s.io': NASTY, region: `\u202e${NASTY}` },
  });
  expect(registered).toMatchObject({ cluster: 'edge-1' });
  const values = await api('PUT', '/api/v1/values', ready.adminKey ?? '', {
    [NASTY]: { 'k\u2066': NASTY },
  });
  expect(values).toEqual({ [NASTY]: { 'k\u2066': NASTY } });
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

const COMMANDS: ReadonlyArray<readonly string[]> = [
  ['cluster', 'get', 'edge-1'],
  ['cluster', 'list'],
  ['values', 'get', '--source', 'platform-config'],
  ['values', 'get', 'edge-1'],
  ['audit'],
];

/** Every command's output as text and as JSON, run side by side (keyed by the command line). */
const outputs = new Map<string, { text: RunResult; json: RunResult }>();

async function runAll(): Promise<void> {
  await Promise.all(
    COMMANDS.map(async (args) => {
      const [text, json] = await Promise.all([
        run(RELAY_BIN, args, adminEnv),
        run(RELAY_BIN, [...args, '--output', 'json'], adminEnv),
      ]);
      outputs.set(args.join(' '), { text, json });
    }),
  );
}

const output = (command: string) => {
  const o = outputs.get(command);
  if (!o) throw new Error(`${command} did not run`);
  return o;
};

describe('CLI output of untrusted strings', () => {
  beforeAll(runAll, 60_000);

  it.each(COMMANDS.map((c) => c.join(' ')))(
    '%s prints no raw control or bidi character, as text or JSON',
    (command) => {
      const { text, json } = output(command);
      expect(text.code, text.stderr).toBe(0);
      expect(rawDangerous(text.stdout + text.stderr)).toEqual([]);
      expect(json.code, json.stderr).toBe(0);
      expect(rawDangerous(json.stdout + json.stderr)).toEqual([]);
      JSON.parse(json.stdout);
    },
  );

  it('tunnel-client escapes what its error line quotes (a state directory name)', async () => {
    const dir = join(tempDir('cli-escape-client-'), NASTY.replace(/\//g, '_'));
    const r = await run(CLIENT_BIN, ['status', '--state-dir', dir], cleanEnv());
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^error [A-Z_]+: /);
    expect(r.stderr).toContain('\\u001b[2J');
    expect(rawDangerous(r.stdout + r.stderr)).toEqual([]);
  });

  it('keeps the stored strings exact in JSON and shows them as visible escapes in text', () => {
    const cluster = JSON.parse(output('cluster get edge-1').json.stdout);
    expect(cluster.displayName).toBe(NASTY);
    expect(cluster.agentVersion).toBe(NASTY);
    expect(cluster.claims).toEqual({ 'id.k8s.io': NASTY, region: `\u202e${NASTY}` });
    expect(JSON.parse(output('cluster list').json.stdout).items[0].agentVersion).toBe(NASTY);
    expect(JSON.parse(output('values get --source platform-config').json.stdout)).toEqual({
      [NASTY]: { 'k\u2066': NASTY },
    });

    const text = output('cluster get edge-1').text.stdout;
    const shown =
      'v\\u001b[2J\\u001b]8;;https://e.x\\u0007L\\u001b]8;;\\u0007\\u001b]52;c;aGk=\\u0007\\u009b1m\\u007f\\u202egpj.exe';
    expect(text).toContain(`display name:  ${shown}`);
    expect(text).toContain(`agent version: ${shown}`);
    expect(text).toContain(`  region=\\u202e${shown}`);
  });
});
