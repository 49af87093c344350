/**
 * `tunnel-relay audit [--limit N] [--continue TOKEN | --all] [--since TIME] [--actor ID] [--cluster NAME]
 * [--kind exec|attach|port-forward]`: the relay's audit log, newest first (admin, viewer). Session rows (exec,
 * attach, port-forward through the path proxy) show the pod, command, bytes and how the session ended. One page of --limit rows (default 100) and the token for the next; --all reads
 * every page (list-pages.ts).
 */
import { Command } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { printAnswer, table } from '../../shared/kit/cli/output.js';
import { oneOf, parseClusterName, shown } from '../../shared/kit/cli/parsers.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';
import { nextPageNote, type PageFlags, pageOptions, readPages } from './list-pages.js';

interface AuditItem {
  id: string | number;
  at: string;
  actor: string;
  action: string;
  target: string;
  source?: string | null;
  detail?: Record<string, unknown>;
}

const KINDS = ['exec', 'attach', 'port-forward'] as const;
type Kind = (typeof KINDS)[number];

/** The relay serves at most this many entries per call. */
export const AUDIT_LIMIT_MAX = 1000;
/** Entries per page with --all: well within the 4 MiB a response may have, whatever their details hold. */
export const AUDIT_FOLLOW_PAGE = 250;

type AuditFlags = AdminFlags &
  PageFlags & { all?: boolean; since?: string; actor?: string; cluster?: string; kind?: Kind };

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
  if (flags.cluster !== undefined) query.set('cluster', flags.cluster);
  if (flags.kind !== undefined) query.set('kind', flags.kind);
  const text = query.toString();
  return text === '' ? '/api/v1/audit' : `/api/v1/audit?${text}`;
}

/** One line for a session row: role, pod/container, command, bytes and how it ended; `-` for other rows. */
export function sessionText(a: AuditItem): string {
  const d = a.detail;
  if (!a.action.startsWith('session.') || !d) return '-';
  const text = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) ? v.join(' ') : '');
  const pod = `${text(d.namespace)}/${text(d.pod)}${d.container ? `:${text(d.container)}` : ''}`;
  const what = text(d.command) || (text(d.ports) && `ports ${text(d.ports)}`);
  const line = `${text(d.role)} ${pod}${what ? ` [${what}]` : ''} in ${Number(d.bytesIn)}B out ${Number(d.bytesOut)}B, ${text(d.exitReason)}`;
  return line; // table() makes it terminal-safe
}

export function auditCommand(): Command {
  const cmd = new Command('audit')
    .description('show the audit log, newest first')
    .option('--all', 'every entry (page after page) instead of one page')
    .option('--since <time>', 'only entries at or after this RFC 3339 time', parseSince)
    .option('--actor <id>', 'only entries of this actor (a key id, agent:NAME, bootstrap:KEY...)', parseActor)
    .option('--cluster <name>', 'only entries about this cluster', (v: string) =>
      parseClusterName(v, '--cluster'),
    )
    .option(
      '--kind <kind>',
      'only sessions of this kind: exec, attach or port-forward',
      oneOf('--kind', KINDS),
    );
  for (const option of pageOptions('entries', AUDIT_LIMIT_MAX, 100)) cmd.addOption(option);
  return withAdminFlags(cmd).action(async (flags: AuditFlags) => {
    const res = await withClient(flags, (c) =>
      readPages<AuditItem>(c, auditPath(flags), flags, AUDIT_FOLLOW_PAGE),
    );
    printAnswer(flags.output, res, (out) => {
      // The SESSION column only when a session row is shown (exec, attach, port-forward through the relay).
      const sessions = res.items.some((a) => a.action.startsWith('session.'));
      const head = ['AT', 'ACTOR', 'ACTION', 'TARGET', 'SOURCE', ...(sessions ? ['SESSION'] : [])];
      const row = (a: AuditItem) => [a.at, a.actor, a.action, a.target, a.source ?? '-'];
      out.line(
        table(
          head,
          res.items.map((a) => (sessions ? [...row(a), sessionText(a)] : row(a))),
        ),
      );
      const filters = [
        flags.since && ` --since ${flags.since}`,
        flags.actor && ` --actor ${flags.actor}`,
        flags.cluster && ` --cluster ${flags.cluster}`,
        flags.kind && ` --kind ${flags.kind}`,
      ]
        .filter(Boolean)
        .join('');
      const next = nextPageNote(`tunnel-relay audit${filters}`, res, flags.limit);
      if (next !== null) out.note(next);
    });
  });
}
