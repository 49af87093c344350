/**
 * The Clusters view, a fleet list: one row per cluster of the pages read so far (use-clusters.ts; "Load more
 * clusters" reads the next) with one state badge, the path in its colour, the Kubernetes version and node count the
 * agent reports; sortable by its columns, filtered by group, state, name and claims, live from the feed; rows a role
 * may change can be selected for bulk accept and delete.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ClusterBadge, PathCell } from '../components/bits.js';
import { LoadMore } from '../components/load-more.js';
import { matchesClaims, parseClaimFilter } from '../lib/claim-filter.js';
import { rowState, type Sort, sortClusters } from '../lib/cluster-sort.js';
import { useConsole } from '../lib/context.js';
import { age, latest, when } from '../lib/format.js';
import { useNow } from '../lib/hooks.js';
import { clusterHref } from '../lib/router.js';
import type { Cluster } from '../lib/types.js';
import { BulkActions } from './bulk-actions.js';
import { ClusterFilters, type Filters, NO_FILTERS } from './cluster-filters.js';
import { ConnectDrawer } from './connect-drawer.js';
import { SortHeader } from './sort-header.js';

function matches(c: Cluster, f: Filters): boolean {
  if (f.group && c.group !== f.group) return false;
  if (f.state && rowState(c) !== f.state) return false;
  if (!matchesClaims(c.claims, parseClaimFilter(f.claims))) return false;
  const q = f.search.trim().toLowerCase();
  return q === '' || c.name.includes(q) || c.displayName.toLowerCase().includes(q);
}

/** The Connect drawer's state; focus goes back to the button that opened it when it closes. */
function useConnectDrawer() {
  const [connecting, setConnecting] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const was = useRef(false);
  useEffect(() => {
    if (was.current && !connecting) button.current?.focus();
    was.current = connecting;
  }, [connecting]);
  return { connecting, setConnecting, button };
}

export function ClustersPage() {
  const { clusters, loaded, can, more, loadMore, loadingMore, listError } = useConsole();
  const now = useNow();
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [sort, setSort] = useState<Sort>({ key: 'name', descending: false });
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const drawer = useConnectDrawer();
  const all = [...clusters.values()];
  const groups = useMemo(() => [...new Set(all.map((c) => c.group))].sort(), [clusters]);
  const rows = sortClusters(
    all.filter((c) => matches(c, filters)),
    sort,
  );
  const selectable = rows.filter((c) => can.writeCluster(c.group));
  const chosen = selectable.filter((c) => selected.has(c.name));
  const toggle = (name: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(name);
    else next.delete(name);
    setSelected(next);
  };
  const allChosen = selectable.length > 0 && chosen.length === selectable.length;
  // Keys that may change no cluster shown get no checkbox column.
  const selectColumn = selectable.length > 0;
  return (
    <section aria-labelledby="clusters-title">
      <div class="page-head">
        <h1 id="clusters-title">Clusters</h1>
        {can.createCluster && (
          <button
            type="button"
            ref={drawer.button}
            onClick={() => drawer.setConnecting(true)}
            data-action="connect"
          >
            Connect cluster
          </button>
        )}
      </div>
      <ClusterFilters filters={filters} onChange={setFilters} groups={groups} sort={sort} onSort={setSort} />
      {selectable.length > 0 && <BulkActions selected={chosen} onDone={() => setSelected(new Set())} />}
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
                {selectColumn && (
                  <th scope="col">
                    <input
                      type="checkbox"
                      aria-label="Select all clusters shown"
                      checked={allChosen}
                      onChange={(e) =>
                        setSelected(new Set(e.currentTarget.checked ? selectable.map((c) => c.name) : []))
                      }
                    />
                  </th>
                )}
                <SortHeader label="Display name" col="name" sort={sort} onSort={setSort} />
                <th scope="col">Name</th>
                <th scope="col">Group</th>
                <SortHeader label="State" col="state" sort={sort} onSort={setSort} />
                <SortHeader label="Path" col="path" sort={sort} onSort={setSort} />
                <SortHeader label="Kubernetes" col="version" sort={sort} onSort={setSort} />
                <SortHeader label="Nodes" col="nodes" sort={sort} onSort={setSort} />
                <th scope="col">Agent</th>
                <SortHeader label="Last seen" col="seen" sort={sort} onSort={setSort} />
                <th scope="col">Claims</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <ClusterRow
                  key={c.name}
                  c={c}
                  now={now}
                  selectColumn={selectColumn}
                  selectable={can.writeCluster(c.group)}
                  selected={selected.has(c.name)}
                  onSelect={(on) => toggle(c.name, on)}
                />
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
      {drawer.connecting && <ConnectDrawer onClose={() => drawer.setConnecting(false)} />}
    </section>
  );
}

interface RowProps {
  c: Cluster;
  now: number;
  selectColumn: boolean;
  selectable: boolean;
  selected: boolean;
  onSelect(on: boolean): void;
}

function ClusterRow({ c, now, selectColumn, selectable, selected, onSelect }: RowProps) {
  const seen = latest(c.lastHandshake, c.leaseRenewTime);
  const claims = Object.entries(c.claims);
  return (
    <tr
      data-cluster={c.name}
      data-connected={String(c.connected)}
      data-status={c.status}
      data-state={c.state}
    >
      {selectColumn && (
        <td data-label="Select">
          {selectable && (
            <input
              type="checkbox"
              aria-label={`Select ${c.name}`}
              checked={selected}
              onChange={(e) => onSelect(e.currentTarget.checked)}
            />
          )}
        </td>
      )}
      <td data-label="Display name" data-field="display-name">
        {c.displayName || c.name}
      </td>
      <td data-label="Name">
        <a href={clusterHref(c.name)}>{c.name}</a>
      </td>
      <td data-label="Group">{c.group}</td>
      <td data-label="State" data-field="state">
        <ClusterBadge c={c} />
      </td>
      <td data-label="Path" data-field="path">
        <PathCell c={c} />
      </td>
      <td data-label="Kubernetes" data-field="kubernetes-version">
        {c.kubernetesVersion ?? '-'}
      </td>
      <td data-label="Nodes" data-field="nodes">
        {c.nodeCount ?? '-'}
      </td>
      <td data-label="Agent">
        {c.agentVersion ?? '-'}
        {c.agentOutdated ? <span class="warn"> (outdated)</span> : null}
      </td>
      <td data-label="Last seen" title={when(seen)}>
        {age(seen, now)}
      </td>
      <td data-label="Claims" title={claims.map(([k, v]) => `${k}=${v}`).join('\n')}>
        {claims.length}
      </td>
    </tr>
  );
}
