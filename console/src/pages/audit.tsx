/** Audit log (admin, viewer): newest first, filtered by actor and action (over the newest 1000 rows). */
import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { useConsole } from '../context.js';
import { when } from '../format.js';
import { useLoad } from '../hooks.js';
import type { AuditItem } from '../types.js';

export const AUDIT_ROWS = 1000;

export function AuditPage() {
  const { api, can } = useConsole();
  const rows = useLoad(
    async () => (await api.get<{ items: AuditItem[] }>(`/api/v1/audit?limit=${AUDIT_ROWS}`)).items,
    [],
  );
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  if (!can.readAudit) return <p>Your role cannot read the audit log.</p>;
  const items = rows.data ?? [];
  const actors = [...new Set(items.map((r) => r.actor))].sort();
  const actions = [...new Set(items.map((r) => r.action))].sort();
  const shown = items.filter((r) => (!actor || r.actor === actor) && (!action || r.action === action));
  return (
    <section aria-labelledby="audit-title">
      <div class="page-head">
        <h1 id="audit-title">Audit log</h1>
        <button type="button" class="secondary" onClick={rows.reload}>
          Refresh
        </button>
      </div>
      <div class="filters">
        <label>
          Actor
          <select value={actor} onChange={(e) => setActor(e.currentTarget.value)}>
            <option value="">All actors</option>
            {actors.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label>
          Action
          <select value={action} onChange={(e) => setAction(e.currentTarget.value)}>
            <option value="">All actions</option>
            {actions.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorNote error={rows.error} />
      <p class="muted">
        {shown.length} of the newest {items.length} entries, newest first.
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Source</th>
              <th scope="col">Detail</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.id} data-audit-action={r.action}>
                <td data-label="Time">{when(r.at)}</td>
                <td data-label="Actor" class="mono">
                  {r.actor}
                </td>
                <td data-label="Action">{r.action}</td>
                <td data-label="Target">{r.target}</td>
                <td data-label="Source">{r.source}</td>
                <td data-label="Detail" class="mono">
                  {r.detail === null || r.detail === undefined ? '' : JSON.stringify(r.detail)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
