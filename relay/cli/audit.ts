/** `tunnel-relay audit [--limit N]`: the relay's audit log, newest first (admin, viewer). */
import { Command } from 'commander';
import { printAnswer, table } from '../../shared/cli/output.js';
import { shown } from '../../shared/cli/parsers.js';
import { TunnelError } from '../../shared/errors.js';
import { type AdminFlags, withAdminFlags, withClient } from './admin-client.js';

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

function parseLimit(v: string): number {
  const n = Number(v);
  if (!/^\d{1,4}$/.test(v) || n < 1 || n > AUDIT_LIMIT_MAX) {
    throw new TunnelError('BAD_INPUT', `--limit ${shown(v)} is not valid: expected 1-${AUDIT_LIMIT_MAX}`);
  }
  return n;
}

export function auditCommand(): Command {
  return withAdminFlags(
    new Command('audit')
      .description('show the audit log, newest first')
      .option('--limit <n>', `how many entries, 1-${AUDIT_LIMIT_MAX}`, parseLimit, 100),
  ).action(async (flags: AdminFlags & { limit: number }) => {
    const res = await withClient(flags, (c) =>
      c.json<{ items: AuditItem[] }>('GET', `/api/v1/audit?limit=${flags.limit}`),
    );
    printAnswer(flags.output, res, (out) =>
      out.line(
        table(
          ['AT', 'ACTOR', 'ACTION', 'TARGET', 'SOURCE'],
          res.items.map((a) => [a.at, a.actor, a.action, a.target, a.source ?? '-']),
        ),
      ),
    );
  });
}
