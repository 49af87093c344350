/**
 * The Clusters page's filters (name, group, state, claims as `key=value`) and a "Sort by" choice that also works on
 * a phone, where the table's headers are hidden.
 */
import { SORT_KEYS, type Sort, type SortKey } from '../lib/cluster-sort.js';

export interface Filters {
  search: string;
  group: string;
  state: string;
  claims: string;
}

export const NO_FILTERS: Filters = { search: '', group: '', state: '', claims: '' };

const STATES = ['Pending', 'Denied', 'Connected', 'Degraded', 'Disconnected', 'Never connected'];

const SORT_LABELS: Readonly<Record<SortKey, string>> = {
  name: 'Name',
  state: 'State',
  path: 'Path',
  version: 'Kubernetes version',
  nodes: 'Nodes',
  seen: 'Last seen',
};

function sortOf(value: string): Sort {
  const [key, dir] = value.split(':');
  const found = SORT_KEYS.find((k) => k === key) ?? 'name';
  return { key: found, descending: dir === 'desc' };
}

interface Props {
  filters: Filters;
  onChange(f: Filters): void;
  groups: readonly string[];
  sort: Sort;
  onSort(s: Sort): void;
}

export function ClusterFilters({ filters, onChange, groups, sort, onSort }: Props) {
  const set = (part: Partial<Filters>) => onChange({ ...filters, ...part });
  return (
    <div class="filters">
      <label>
        Search by name
        <input type="search" value={filters.search} onInput={(e) => set({ search: e.currentTarget.value })} />
      </label>
      <label>
        Group
        <select value={filters.group} onChange={(e) => set({ group: e.currentTarget.value })}>
          <option value="">All groups</option>
          {groups.map((g) => (
            <option key={g} value={g}>
              {g}
            </option>
          ))}
        </select>
      </label>
      <label>
        State
        <select value={filters.state} onChange={(e) => set({ state: e.currentTarget.value })}>
          <option value="">All states</option>
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Claims
        <input
          type="search"
          value={filters.claims}
          placeholder="key=value"
          spellcheck={false}
          onInput={(e) => set({ claims: e.currentTarget.value })}
        />
      </label>
      <div class="filter">
        <label for="cluster-sort">Sort by</label>
        <select
          id="cluster-sort"
          value={`${sort.key}:${sort.descending ? 'desc' : 'asc'}`}
          onChange={(e) => onSort(sortOf(e.currentTarget.value))}
        >
          {SORT_KEYS.flatMap((k) => [
            <option key={`${k}:asc`} value={`${k}:asc`}>
              {SORT_LABELS[k]} ↑
            </option>,
            <option key={`${k}:desc`} value={`${k}:desc`}>
              {SORT_LABELS[k]} ↓
            </option>,
          ])}
        </select>
      </div>
    </div>
  );
}
