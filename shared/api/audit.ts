/** GET /api/v1/audit: one page of the audit log, newest first. */
import { type Static, Type } from '@sinclair/typebox';
import { Continue, closed } from './schema-parts.js';

export const AuditItem = Type.Object(
  {
    id: Type.Number(),
    at: Type.String(),
    /** A key id, `agent:NAME`, `bootstrap:KEY`, ... */
    actor: Type.String(),
    action: Type.String(),
    target: Type.String(),
    source: Type.String(),
    detail: Type.Record(Type.String(), Type.Unknown()),
  },
  closed,
);
export type AuditItem = Static<typeof AuditItem>;

export const AuditList = Type.Object({ items: Type.Array(AuditItem), continue: Continue }, closed);
export type AuditList = Static<typeof AuditList>;
