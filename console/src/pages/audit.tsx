/**
 * Audit log (admin, viewer): newest first, AUDIT_PAGE entries at a time ("Load more entries" reads older ones).
 * The actor, cluster and session-kind filters are the relay's (`?actor=`, `?cluster=`, `?kind=`: every matching
 * entry, page by page); the action filter applies to the entries loaded. Session rows (exec, attach,
 * port-forward through the relay) read as who, which pod and command, bytes each way and how they ended.
 */
import { useState } from 'preact/hooks';
import { LoadMore } from '../components/load-more.js';
import { useConsole } from '../lib/context.js';
import { when } from '../lib/format.js';
import { sessionSummary } from '../lib/session-summary.js';
import type { AuditItem } from '../lib/types.js';
import { usePages } from '../lib/use-pages.js';

export const AUDIT_PAGE = 200;

export function AuditPage() {
  const { api, can } = useConsole();
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [kind, setKind] = useState('');
  const [cluster, setCluster] = useState('');
  const query = new URLSearchParams();
  if (actor) query.set('actor', actor);
  if (cluster) query.set('cluster', cluster);
  if (kind) query.set('kind', kind);
  const path = query.toString() ? `/api/v1/audit?${query.toString()}` : '/api/v1/audit';
  const rows = usePages<AuditItem>(api, path, AUDIT_PAGE);
  // The actors seen so far stay offered while one of them is chosen.
  const [seenActors, setSeenActors] = useState<ReadonlySet<string>>(new Set());
  const fresh = rows.items.map((r) => r.actor).filter((a) => !seenActors.has(a));
  if (fresh.length > 0) setSeenActors(new Set([...seenActors, ...fresh]));
  if (!can.readAudit) return <p>Your role cannot read the audit log.</p>;
  const items = rows.items;
  const actors = [...seenActors].sort();
  const actions = [...new Set(items.map((r) => r.action))].sort();
  const shown = items.filter((r) => !action || r.action === action);
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
          Cluster
          <input
            value={cluster}
            placeholder="any"
            onInput={(e) => setCluster(e.currentTarget.value.trim())}
            data-audit-cluster
          />
        </label>
        <label>
          Session
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value)} data-audit-kind>
            <option value="">All entries</option>
            <option value="exec">exec</option>
            <option value="attach">attach</option>
            <option value="port-forward">port-forward</option>
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
      <p class="muted">
        {shown.length} of the {items.length} newest entries{actor ? ` of ${actor}` : ''}, newest first.
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
                  {r.detail === null || r.detail === undefined
                    ? ''
                    : r.action.startsWith('session.')
                      ? sessionSummary(r.detail)
                      : JSON.stringify(r.detail)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <LoadMore
        what="entries"
        shown={items.length}
        more={rows.more}
        loading={rows.loading}
        error={rows.error}
        onMore={rows.loadMore}
      />
    </section>
  );
}
