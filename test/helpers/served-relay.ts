/**
 * One real `tunnel-relay serve` for a test file (the built CLI, test/cli-harness.ts): on 127.0.0.1, an ephemeral
 * port and a fresh data dir, started in beforeAll (building the CLI if stale) and stopped in afterAll, then every
 * leftover process and temporary directory (cleanup). Call it at the top of the file; its fields are set once
 * beforeAll has run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import {
  adminEnvOf,
  buildIfStale,
  cleanup,
  type Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  startServe,
  tempDir,
} from '../cli-harness.js';

export class ServedRelay {
  proc!: Proc;
  ready!: ReadyLine;
  /** The admin CLI's environment: the relay's URL, its first admin key and its CA pin. */
  adminEnv!: NodeJS.ProcessEnv;
  dataDir!: string;

  /** The relay's self-signed certificate, which clients trust (--cacert). */
  get certFile(): string {
    return join(this.dataDir, 'tls', 'cert.pem');
  }

  get caPem(): string {
    return readFileSync(this.certFile, 'utf8');
  }

  /** Runs `tunnel-relay ARGS` with the admin environment. */
  admin(...args: string[]) {
    return run(RELAY_BIN, args, this.adminEnv);
  }
}

/** `args`: serve flags after the harness's (--output json, --listen, --data-dir, --udp-port off, --stun-port off). */
export function serveForFile(o: { prefix: string; args?: readonly string[] }): ServedRelay {
  const relay = new ServedRelay();
  beforeAll(async () => {
    buildIfStale();
    relay.dataDir = tempDir(`${o.prefix}-`);
    const started = await startServe(relay.dataDir, '127.0.0.1:0', o.args ?? []);
    relay.proc = started.proc;
    relay.ready = started.ready;
    relay.adminEnv = adminEnvOf(started.ready);
  }, 180_000);
  afterAll(async () => {
    await relay.proc?.stop();
    await cleanup();
  });
  return relay;
}
