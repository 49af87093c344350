/**
 * `tunnel-relay admin-key create --data-dir DIR`: the offline recovery path when no admin key is left
 * (revoked, expired or lost). It opens the relay's store directly (no API call, no credential: whoever
 * can write the data dir owns the relay anyway), adds an admin key, writes an audit entry
 * (actor `local`) and prints the key once. It works with the relay stopped; a running relay on the same
 * SQLite file accepts the key at once.
 */
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { type OutputFormat, outputOption, streamPrinter } from '../../shared/kit/cli/output.js';
import { type RelayConfig, resolveRelayConfig } from '../ops/config/config.js';
import { describeTarget } from '../ops/config/postgres-url.js';
import { mintAdminKey } from '../start/admin-key.js';

interface AdminKeyFlags {
  dataDir?: string;
  store?: string;
  storePasswordFile?: string;
  storeCaFile?: string;
  config?: string;
  description?: string;
  output: OutputFormat;
}

const DESCRIPTION_MAX = 200;

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/** Refuses a data dir without a store, so a typo does not mint a key into a fresh, unused database. */
function existingStore(config: RelayConfig): RelayConfig {
  if (config.store.kind === 'sqlite' && !existsSync(config.store.path)) {
    throw new TunnelError(
      'BAD_CONFIG',
      `data-dir: there is no relay store at ${config.store.path}; give the --data-dir (or --store) the relay runs with`,
    );
  }
  return config;
}

async function createAdminKey(flags: AdminKeyFlags): Promise<void> {
  const description = flags.description ?? 'recovery admin key (admin-key create)';
  if (description.length > DESCRIPTION_MAX) {
    throw new TunnelError(
      'BAD_INPUT',
      `--description is ${description.length} characters; at most ${DESCRIPTION_MAX}`,
    );
  }
  const config = existingStore(
    resolveRelayConfig({
      flags: {
        dataDir: flags.dataDir,
        store: flags.store,
        storePasswordFile: flags.storePasswordFile,
        storeCaFile: flags.storeCaFile,
      },
      env: process.env,
      configFile: flags.config ?? null,
    }),
  );
  // The store's modules load only here: the other commands start without them.
  const { openStore } = await import('../start/server.js');
  const store = await openStore(config, { existingOnly: true });
  let minted: { id: string; token: string };
  try {
    minted = await mintAdminKey(store, {
      now: Date.now(),
      description,
      actor: 'local',
      detail: { via: 'admin-key create', osUser: osUser() },
    });
  } finally {
    await store.close();
  }
  const out = streamPrinter();
  if (flags.output === 'json') {
    out.json({ id: minted.id, role: 'admin', token: minted.token, expiresAt: null });
    return;
  }
  out.line(minted.token);
  out.note(
    `admin access key ${minted.id} written to ${config.store.kind === 'sqlite' ? config.store.path : describeTarget(config.store.target)}; ` +
      'it is shown only now and works at once (relay running or on its next start)',
  );
}

export function adminKeyCommand(): Command {
  const cmd = new Command('admin-key').description(
    'offline recovery: mint an admin access key directly in the data dir (no relay call)',
  );
  cmd.addCommand(
    new Command('create')
      .description('add an admin access key to the store and print it once (audited as actor "local")')
      .option('--data-dir <dir>', "the relay's data dir (default ~/.tunnel-relay)")
      .option(
        '--store <url>',
        'the --store the relay runs with: sqlite:PATH (default DATA_DIR/relay.db) or postgres://...',
      )
      .option('--store-password-file <file>', 'PostgreSQL password file, as for serve')
      .option('--store-ca-file <file>', 'PEM CA of the PostgreSQL server, as for serve')
      .option('--config <file>', "the relay's YAML config file (for data-dir and store)")
      .option('--description <text>', 'what the key is for')
      .addOption(outputOption())
      .action(createAdminKey),
  );
  return cmd;
}
