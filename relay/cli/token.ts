/** `tunnel-relay token create|list|revoke`: access keys (admin only). */

import { resolve } from 'node:path';
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { printAnswer, streamPrinter, table } from '../../shared/kit/cli/output.js';
import { parseRole, shown } from '../../shared/kit/cli/parsers.js';
import { shellQuote } from '../../shared/kit/cli/shell-quote.js';
import { parseDuration } from '../../shared/kit/duration.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import { nextPageNote, type PageFlags, pageOptions, readPages } from './list-pages.js';

/** The relay's largest page of access keys (relay/control/model/paging.ts TOKEN_PAGE). */
export const TOKEN_PAGE_MAX = 1000;

interface CreatedToken {
  id: string;
  role: string;
  token: string;
  expiresAt: string | null;
}

interface TokenInfo {
  id: string;
  role: string;
  description?: string | null;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

/**
 * The join command for an org-wide bootstrap key, runnable as printed: this command's relay URL and trust (pin or
 * CA file), the key in the environment, an example cluster name.
 */
function bootstrapJoinCommand(flags: AdminFlags, token: string): string {
  const trust = flags.caPin
    ? ` --ca-pin ${flags.caPin}`
    : flags.caFile
      ? ` --ca-file ${shellQuote(resolve(flags.caFile))}`
      : '';
  return `TUNNEL_CLIENT_PSK=${token} tunnel-client join --relay ${shellQuote(flags.server)} --cluster edge-2${trust}`;
}

export function tokenCommand(): Command {
  const token = new Command('token').description('access keys for people and tools');

  token.addCommand(
    withAdminFlags(
      new Command('create')
        .description('create an access key and print it (shown once)')
        .requiredOption(
          '--role <role>',
          'admin, viewer, group-editor:GROUP, or bootstrap (org-wide join token)',
          parseRole,
        )
        .option('--description <text>', 'what the key is for')
        .option('--expires-in <duration>', 'lifetime, e.g. 30d (default: no expiry)', (v: string) => {
          parseDuration(v, '--expires-in');
          return v;
        }),
    ).action(async (flags: AdminFlags & { role: string; description?: string; expiresIn?: string }) => {
      if (flags.description !== undefined && flags.description.length > 200) {
        throw new TunnelError(
          'BAD_INPUT',
          `--description is ${flags.description.length} characters; at most 200`,
        );
      }
      const body = {
        role: flags.role,
        description: flags.description,
        expiresIn: flags.expiresIn,
      };
      const res = await withClient(flags, (c) => c.json<CreatedToken>('POST', '/api/v1/tokens', { body }));
      printAnswer(flags.output, res, (out) => {
        out.line(res.token);
        out.note(
          `access key ${res.id} (role ${res.role}, expires ${res.expiresAt ?? 'never'}); it is shown only now`,
        );
        if (res.role === 'bootstrap') {
          out.note(
            'agents join with (each with its own --cluster name; each join stays Pending until accepted):',
          );
          out.note(`  ${bootstrapJoinCommand(flags, res.token)}`);
        }
      });
    }),
  );

  const list = new Command('list').description('list access keys (never their secrets), oldest first');
  for (const option of pageOptions('access keys', TOKEN_PAGE_MAX)) list.addOption(option);
  token.addCommand(
    withAdminFlags(list).action(async (flags: AdminFlags & PageFlags) => {
      const res = await withClient(flags, (c) =>
        readPages<TokenInfo>(c, '/api/v1/tokens', flags, TOKEN_PAGE_MAX),
      );
      printAnswer(flags.output, res, (out) => {
        out.line(
          table(
            ['ID', 'ROLE', 'CREATED', 'EXPIRES', 'REVOKED', 'DESCRIPTION'],
            res.items.map((t) => [
              t.id,
              t.role,
              t.createdAt,
              t.expiresAt ?? '-',
              t.revokedAt ?? '-',
              t.description ?? '',
            ]),
          ),
        );
        const next = nextPageNote('tunnel-relay token list', res, flags.limit);
        if (next !== null) out.note(next);
      });
    }),
  );

  token.addCommand(
    withAdminFlags(
      new Command('revoke')
        .description('revoke an access key')
        .argument('<id>', 'key id (from token list)', (v: string) => {
          if (!/^[A-Za-z0-9_-]{1,64}$/.test(v))
            throw new TunnelError('BAD_INPUT', `token id ${shown(v)} is not valid`);
          return v;
        }),
    ).action(async (id: string, flags: AdminFlags) => {
      const res = await withClient(flags, (c) =>
        c.json<{ revoked: string }>('DELETE', `/api/v1/tokens/${encodeURIComponent(id)}`),
      );
      const out = streamPrinter();
      if (flags.output === 'json') out.json(res);
      else out.line(`revoked access key ${res.revoked}`);
    }),
  );

  return token;
}
