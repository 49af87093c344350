/**
 * First-hour mistakes against a real relay, each answered with what to do: a plain-HTTP request to the TLS port gets
 * 400 TLS_REQUIRED saying to use https:// (not a silent close); a join without the relay's pin is refused with
 * RELAY_CERT_UNTRUSTED naming --ca-pin (the relay answered: not RELAY_UNREACHABLE).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  type Proc,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from './cli-harness.js';

let relay: Proc;
let ready: ReadyLine;

beforeAll(async () => {
  buildIfStale();
  ({ proc: relay, ready } = await startServe(join(tempDir('first-hour-'), 'relay'), '127.0.0.1:0'));
}, 180_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

describe('first-hour errors', () => {
  it('a plain-HTTP request to the TLS port is answered 400 TLS_REQUIRED: use https://', async () => {
    const plain = ready.url.replace(/^https:/, 'http:');
    const r = await curl(['-sS', '-w', '\n%{http_code}', `${plain}/healthz`]);
    expect(r.code, r.stderr).toBe(0);
    const [body, status] = r.stdout.split('\n');
    expect(status).toBe('400');
    expect(JSON.parse(body ?? '')).toEqual({
      error: {
        code: 'TLS_REQUIRED',
        message: 'this port speaks TLS: use https:// (a plain-HTTP request reached the TLS port)',
      },
    });
    // The TLS port still serves TLS.
    expect((await curl(['-sS', '-k', `${ready.url}/healthz`])).stdout).toBe('ok\n');
  }, 30_000);

  it('a join without the pin of a self-signed relay: RELAY_CERT_UNTRUSTED naming --ca-pin', async () => {
    const stateDir = join(tempDir('first-hour-agent-'), 'state');
    const r = await run(
      CLIENT_BIN,
      [
        'join',
        '--relay',
        ready.url,
        '--cluster',
        'edge-x',
        '--psk',
        `tpsk_${'A'.repeat(43)}`,
        '--state-dir',
        stateDir,
      ],
      cleanEnv(),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('RELAY_CERT_UNTRUSTED');
    expect(r.stderr).toContain('pass --ca-pin sha256:... as printed by the relay, or --ca-file');
    expect(r.stderr).not.toContain('RELAY_UNREACHABLE');
  }, 30_000);
});
