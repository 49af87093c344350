/**
 * Flags every admin command takes, and the relay client built from them:
 *   --server URL        (env TUNNEL_RELAY_URL, default https://127.0.0.1:8443)
 *   --access-key KEY    (env TUNNEL_ACCESS_KEY)
 *   --ca-pin sha256:... (env TUNNEL_RELAY_CA_PIN) or --ca-file FILE (env TUNNEL_RELAY_CA_FILE)
 *   --timeout SECONDS   per call, default 15
 * A flag beats the environment, also across --ca-pin / --ca-file (shared/kit/cli/flag-over-env.ts).
 */
import { type Command, Option } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { flagsBeatEnvironment } from '../../shared/kit/cli/flag-over-env.js';
import { outputOption } from '../../shared/kit/cli/output.js';
import { parseRelayUrl, shown } from '../../shared/kit/cli/parsers.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import { trustFromFlags } from '../../shared/kit/http/trust.js';
import { parseCaPin } from '../../shared/tls-pin.js';

export const DEFAULT_SERVER = 'https://127.0.0.1:8443';

export interface AdminFlags {
  server: string;
  accessKey?: string;
  caPin?: string;
  caFile?: string;
  timeout: number;
  output: 'json' | 'text';
}

function parseTimeout(v: string): number {
  const n = Number(v);
  if (!/^\d{1,4}$/.test(v) || n < 1 || n > 3600) {
    throw new TunnelError('BAD_INPUT', `--timeout ${shown(v)} is not valid: expected whole seconds 1-3600`);
  }
  return n;
}

/** Adds the admin flags (and --output) to `cmd`. */
export function withAdminFlags(cmd: Command): Command {
  flagsBeatEnvironment(cmd, [['caPin', 'caFile']]);
  return cmd
    .addOption(
      new Option('--server <url>', 'relay URL')
        .env('TUNNEL_RELAY_URL')
        .default(DEFAULT_SERVER)
        .argParser((v: string) => parseRelayUrl(v, '--server')),
    )
    .addOption(new Option('--access-key <key>', 'access key (trk_...)').env('TUNNEL_ACCESS_KEY'))
    .addOption(
      new Option('--ca-pin <pin>', "sha256:<hex> of the relay's certificate")
        .env('TUNNEL_RELAY_CA_PIN')
        .argParser((v: string) => parseCaPin(v)),
    )
    .addOption(
      new Option('--ca-file <file>', 'PEM CA certificate(s) to verify the relay with').env(
        'TUNNEL_RELAY_CA_FILE',
      ),
    )
    .addOption(new Option('--timeout <seconds>', 'per-call time limit').default(15).argParser(parseTimeout))
    .addOption(outputOption());
}

export function adminClient(flags: AdminFlags): RelayClient {
  if (!flags.accessKey) {
    throw new TunnelError(
      'BAD_INPUT',
      'missing --access-key: give an access key (trk_...) or set TUNNEL_ACCESS_KEY',
    );
  }
  return new RelayClient({
    baseUrl: parseRelayUrl(flags.server, '--server'),
    trust: trustFromFlags({ caPin: flags.caPin, caFile: flags.caFile }),
    token: flags.accessKey,
    timeoutMs: flags.timeout * 1000,
  });
}

/** Runs `fn` with a client for the flags, closing it afterwards. */
export async function withClient<T>(flags: AdminFlags, fn: (c: RelayClient) => Promise<T>): Promise<T> {
  const client = adminClient(flags);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
