/** `tunnel-relay rate-limit list|clear`: sources counted for failed registrations (list: admin, viewer; clear: admin). */
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { printAnswer, table } from '../../shared/kit/cli/output.js';
import { parseSource } from '../ops/http/source-address.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';

interface LimitItem {
  source: string;
  failures: number;
  limited: boolean;
  windowEndsAt: string;
  retryAfterSeconds: number | null;
}

function listCommand(): Command {
  return withAdminFlags(
    new Command('list').description('list the sources being counted for failed registrations'),
  ).action(async (flags: AdminFlags) => {
    const res = await withClient(flags, (c) =>
      c.json<{ max: number; windowSeconds: number; items: LimitItem[] }>('GET', '/api/v1/rate-limits'),
    );
    printAnswer(flags.output, res, (out) => {
      out.line(
        table(
          ['SOURCE', 'FAILURES', 'LIMITED', 'RETRY AFTER', 'WINDOW ENDS'],
          res.items.map((i) => [
            i.source,
            String(i.failures),
            i.limited ? 'yes' : 'no',
            i.retryAfterSeconds === null ? '-' : `${i.retryAfterSeconds}s`,
            i.windowEndsAt,
          ]),
        ),
      );
      out.note(
        `a source is limited after ${res.max} failed registrations within ${res.windowSeconds} s ` +
          '(valid credentials still register)',
      );
    });
  });
}

function clearCommand(): Command {
  return withAdminFlags(
    new Command('clear')
      .description('forget the failed registrations of one source (or of all) so it is no longer limited')
      .option(
        '--source <address>',
        'IPv4 or IPv6 address, or an IPv6 /64 as `rate-limit list` prints it',
        (v) => parseSource(v, '--source'),
      )
      .option('--all', 'clear every source'),
  ).action(async (flags: AdminFlags & { source?: string; all?: boolean }) => {
    if ((flags.source === undefined) === (flags.all === undefined)) {
      throw new TunnelError('BAD_INPUT', 'give exactly one of --source ADDRESS or --all');
    }
    const query = flags.source === undefined ? 'all=true' : `source=${encodeURIComponent(flags.source)}`;
    const res = await withClient(flags, (c) =>
      c.json<{ cleared: LimitItem[] }>('DELETE', `/api/v1/rate-limits?${query}`),
    );
    printAnswer(flags.output, res, (out) => {
      for (const i of res.cleared) {
        out.line(
          `cleared ${i.source} (${i.failures} failed registrations${i.limited ? ', was limited' : ''})`,
        );
      }
      if (flags.all) out.line(`cleared ${res.cleared.length} sources`);
    });
  });
}

export function rateLimitCommand(): Command {
  return new Command('rate-limit')
    .description('the registration-failure limit per source: list and clear')
    .addCommand(listCommand())
    .addCommand(clearCommand());
}
