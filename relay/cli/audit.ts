/**
 * `tunnel-relay audit [--limit N] [--continue TOKEN | --all] [--since TIME] [--actor ID]`: the relay's audit log,
 * newest first (admin, viewer). One page of --limit rows (default 100) and the token for the next; --all reads
 * every page (list-pages.ts).
 */
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { printAnswer, table } from '../../shared/kit/cli/output.js';
import { shown } from '../../shared/kit/cli/parsers.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import { nextPageNote, type PageFlags, pageOptions, readPages } from './list-pages.js';

interface AuditItem {
  id: string | number;
  at: string;
  actor: string;
  action: string;
  target: string;
  source?: string | null;
}

/** The relay serves at most this many entries per call. */
export const AUDIT_LIMIT_MAX = 1000;
/** Entries per page with --all: well within the 4 MiB a response may have, whatever their details hold. */
export const AUDIT_FOLLOW_PAGE = 250;

type AuditFlags = AdminFlags & PageFlags & { all?: boolean; since?: string; actor?: string };

/** RFC 3339 with a zone, as the relay takes it (relay/control/api/routes/audit.ts). */
function parseSince(v: string): string {
  if (
    !/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/.test(v) ||
    Number.isNaN(Date.parse(v))
  ) {
    throw new TunnelError(
      'BAD_INPUT',
      `--since ${shown(v)} is not valid: expected a time like 2026-01-02T15:04:05Z`,
    );
  }
  return v;
}

function parseActor(v: string): string {
  if (v.length < 1 || v.length > 128 || /[\p{Cc}\s]/u.test(v)) {
    throw new TunnelError(
      'BAD_INPUT',
      `--actor ${shown(v)} is not valid: expected a key id like k_..., agent:NAME`,
    );
  }
  return v;
}

function auditPath(flags: AuditFlags): string {
  const query = new URLSearchParams();
  if (flags.since !== undefined) query.set('since', flags.since);
  if (flags.actor !== undefined) query.set('actor', flags.actor);
  const text = query.toString();
  return text === '' ? '/api/v1/audit' : `/api/v1/audit?${text}`;
}

export function auditCommand(): Command {
  const cmd = new Command('audit')
    .description('show the audit log, newest first')
    .option('--all', 'every entry (page after page) instead of one page')
    .option('--since <time>', 'only entries at or after this RFC 3339 time', parseSince)
    .option(
      '--actor <id>',
      'only entries of this actor (a key id, agent:NAME, bootstrap:KEY...)',
      parseActor,
    );
  for (const option of pageOptions('entries', AUDIT_LIMIT_MAX, 100)) cmd.addOption(option);
  return withAdminFlags(cmd).action(async (flags: AuditFlags) => {
    const res = await withClient(flags, (c) =>
      readPages<AuditItem>(c, auditPath(flags), flags, AUDIT_FOLLOW_PAGE),
    );
    printAnswer(flags.output, res, (out) => {
      out.line(
        table(
          ['AT', 'ACTOR', 'ACTION', 'TARGET', 'SOURCE'],
          res.items.map((a) => [a.at, a.actor, a.action, a.target, a.source ?? '-']),
        ),
      );
      const filters = `${flags.since ? ` --since ${flags.since}` : ''}${flags.actor ? ` --actor ${flags.actor}` : ''}`;
      const next = nextPageNote(`tunnel-relay audit${filters}`, res, flags.limit);
      if (next !== null) out.note(next);
    });
  });
}
