/** A sortable column's header: a button that sorts by it, then reverses; `aria-sort` says the order. */
import type { Sort, SortKey } from '../lib/cluster-sort.js';

export function SortHeader(props: { label: string; col: SortKey; sort: Sort; onSort(s: Sort): void }) {
  const { label, col, sort, onSort } = props;
  const active = sort.key === col;
  const order = active ? (sort.descending ? 'descending' : 'ascending') : 'none';
  return (
    <th scope="col" aria-sort={order}>
      <button
        type="button"
        class="sort"
        data-sort={col}
        onClick={() => onSort({ key: col, descending: active ? !sort.descending : false })}
      >
        {label}
        {active ? (sort.descending ? ' ▼' : ' ▲') : ''}
      </button>
    </th>
  );
}
