/**
 * Replicas of one relay fleet, for tests that run several real `tunnel-relay serve` processes (the built CLI,
 * test/cli-harness.ts): one throw-away PostgreSQL with a database `relay` (postgres.ts) and its password file,
 * and the fleet's shared hub key, certificate and mesh key (relay-fleet.ts). `startReplica` starts one more
 * replica on them (loopback, an ephemeral port and a fresh data dir unless told otherwise); `stop` stops every
 * replica it started, then the database.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Proc, type ReadyLine, startServe, tempDir } from '../cli-harness.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './postgres.js';
import { type FleetFiles, fleetServeArgs, writeFleetFiles } from './relay-fleet.js';

export interface Replica {
  proc: Proc;
  ready: ReadyLine;
}

export interface ReplicaOptions {
  /** Serve flags after the fleet's (e.g. --public-url). */
  extraArgs?: readonly string[];
  /** false: the replica runs without the mesh key. */
  mesh?: boolean;
  /** --listen; 127.0.0.1:0 by default. */
  listen?: string;
  /** --data-dir; a fresh temporary directory by default. */
  dataDir?: string;
  /** How long its ready line may take (startServe's 20 s unless told). */
  readyTimeoutMs?: number;
}

export interface ReplicaFleet {
  readonly postgres: ThrowawayPostgres;
  /** The store URL (no password in it) and the file holding its password. */
  readonly store: { url: string; passwordFile: string };
  readonly files: FleetFiles;
  /** The directory holding the fleet's files; tests may write more there. */
  readonly dir: string;
  /** Every replica started so far, in order; the first minted the admin key. */
  readonly replicas: Replica[];
  /** The admin key the first replica printed ('' before it started). */
  adminKey(): string;
  /** The flags every replica gets (what `startReplica` passes before `extraArgs`). */
  serveArgs(opts?: { mesh?: boolean }): string[];
  startReplica(opts?: ReplicaOptions): Promise<Replica>;
  stop(): Promise<void>;
}

/**
 * Starts the fleet's database and writes its files under a temporary directory named after `prefix` (the
 * certificate also names `altNames`: replicas listening on other addresses than loopback).
 */
export async function startReplicaFleet(
  prefix: string,
  opts: { altNames?: readonly string[] } = {},
): Promise<ReplicaFleet> {
  const dir = tempDir(`${prefix}-`);
  const postgres = await startThrowawayPostgres();
  const db = await postgres.createDatabase('relay');
  const passwordFile = join(dir, 'pg-password');
  writeFileSync(passwordFile, `${postgres.password}\n`, { mode: 0o600 });
  const store = {
    url: `postgres://${db.target.user}@${db.target.host}:${db.target.port}/${db.target.database}`,
    passwordFile,
  };
  const files = writeFleetFiles(dir, opts.altNames);
  const replicas: Replica[] = [];
  const serveArgs = (opts: { mesh?: boolean } = {}) => fleetServeArgs(files, store, opts);
  return {
    postgres,
    store,
    files,
    dir,
    replicas,
    adminKey: () => replicas[0]?.ready.adminKey ?? '',
    serveArgs,
    async startReplica(opts: ReplicaOptions = {}): Promise<Replica> {
      const { proc, ready } = await startServe(
        opts.dataDir ?? tempDir(`${prefix}-replica-`),
        opts.listen ?? '127.0.0.1:0',
        [...serveArgs({ mesh: opts.mesh !== false }), ...(opts.extraArgs ?? [])],
        { readyTimeoutMs: opts.readyTimeoutMs },
      );
      const replica = { proc, ready };
      replicas.push(replica);
      return replica;
    },
    async stop(): Promise<void> {
      for (const r of replicas) await r.proc.stop();
      await postgres.stop();
    },
  };
}
