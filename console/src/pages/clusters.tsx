/**
 * The Clusters view: one row per cluster of the pages read so far (use-clusters.ts; "Load more clusters" reads the
 * next), filtered by group, status and name, live from the feed.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ConditionCell, conditionOf, PathCell, StateBadge, StatusBadge } from '../components/bits.js';
import { LoadMore } from '../components/load-more.js';
import { useConsole } from '../lib/context.js';
import { age, latest, when } from '../lib/format.js';
import { useNow } from '../lib/hooks.js';
import { clusterHref } from '../lib/router.js';
import type { Cluster } from '../lib/types.js';
import { ConnectDrawer } from './connect-drawer.js';

const STATUSES = ['Pending', 'Accepted', 'Denied'] as const;

function matches(c: Cluster, f: { group: string; status: string; search: string }): boolean {
  if (f.group && c.group !== f.group) return false;
  if (f.status && c.status !== f.status) return false;
  const q = f.search.trim().toLowerCase();
  return q === '' || c.name.includes(q) || c.displayName.toLowerCase().includes(q);
}

export function ClustersPage() {
  const { clusters, loaded, can, more, loadMore, loadingMore, listError } = useConsole();
  const now = useNow();
  const [group, setGroup] = useState('');
  const [status, setStatus] = useState('');
  const [search, setSearch] = useState('');
  const [connecting, setConnecting] = useState(false);
  // When the Connect drawer closes, focus goes back to the button that opened it.
  const connectButton = useRef<HTMLButtonElement>(null);
  const wasConnecting = useRef(false);
  useEffect(() => {
    if (wasConnecting.current && !connecting) connectButton.current?.focus();
    wasConnecting.current = connecting;
  }, [connecting]);
  const all = [...clusters.values()];
  const groups = useMemo(() => [...new Set(all.map((c) => c.group))].sort(), [clusters]);
  const rows = all
    .filter((c) => matches(c, { group, status, search }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section aria-labelledby="clusters-title">
      <div class="page-head">
        <h1 id="clusters-title">Clusters</h1>
        {can.createCluster && (
          <button type="button" ref={connectButton} onClick={() => setConnecting(true)} data-action="connect">
            Connect cluster
          </button>
        )}
      </div>
      <div class="filters">
        <label>
          Search by name
          <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </label>
        <label>
          Group
          <select value={group} onChange={(e) => setGroup(e.currentTarget.value)}>
            <option value="">All groups</option>
            {groups.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">All statuses</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      {!loaded && <p class="muted">Loading clusters…</p>}
      {loaded && rows.length === 0 && (
        <p class="muted">
          {all.length === 0 && !more
            ? 'No clusters yet.'
            : `No cluster ${more ? 'loaded so far ' : ''}matches the filters.`}
        </p>
      )}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="clusters">
            <thead>
              <tr>
                <th scope="col">Display name</th>
                <th scope="col">Name</th>
                <th scope="col">Group</th>
                <th scope="col">Status</th>
                <th scope="col">State</th>
                <th scope="col">Joined</th>
                <th scope="col">Available</th>
                <th scope="col">Path</th>
                <th scope="col">Agent</th>
                <th scope="col">Last seen</th>
                <th scope="col">Claims</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <ClusterRow key={c.name} c={c} now={now} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {loaded && (
        <LoadMore
          what="clusters"
          shown={all.length}
          more={more}
          loading={loadingMore}
          error={listError}
          onMore={loadMore}
        />
      )}
      {connecting && <ConnectDrawer onClose={() => setConnecting(false)} />}
    </section>
  );
}

function ClusterRow({ c, now }: { c: Cluster; now: number }) {
  const seen = latest(c.lastHandshake, c.leaseRenewTime);
  return (
    <tr
      data-cluster={c.name}
      data-connected={String(c.connected)}
      data-status={c.status}
      data-state={c.state}
    >
      <td data-label="Display name">{c.displayName || c.name}</td>
      <td data-label="Name">
        <a href={clusterHref(c.name)}>{c.name}</a>
      </td>
      <td data-label="Group">{c.group}</td>
      <td data-label="Status">
        <StatusBadge status={c.status} />
      </td>
      <td data-label="State" data-field="state">
        <StateBadge state={c.state} />
      </td>
      <td data-label="Joined">
        <ConditionCell cond={conditionOf(c, 'Joined')} now={now} />
      </td>
      <td data-label="Available">
        <ConditionCell cond={conditionOf(c, 'Available')} now={now} />
      </td>
      <td data-label="Path" data-field="path">
        <PathCell c={c} />
      </td>
      <td data-label="Agent">
        {c.agentVersion ?? '-'}
        {c.agentOutdated ? <span class="warn"> (outdated)</span> : null}
      </td>
      <td data-label="Last seen" title={when(seen)}>
        {age(seen, now)}
      </td>
      <td data-label="Claims">{Object.keys(c.claims ?? {}).length}</td>
    </tr>
  );
}
