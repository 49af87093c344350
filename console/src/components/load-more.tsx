/** The end of a paged list: how many are shown, and a button that reads the next page while more remain. */
import { ErrorNote } from './bits.js';

export interface LoadMoreProps {
  /** What is listed, plural ("clusters", "entries"). */
  what: string;
  shown: number;
  more: boolean;
  loading: boolean;
  error?: string | null;
  onMore(): void;
}

export function LoadMore({ what, shown, more, loading, error = null, onMore }: LoadMoreProps) {
  return (
    <div class="load-more" data-more={String(more)}>
      <p class="muted" role="status">
        {more ? `${shown} ${what} loaded; more on the relay.` : `All ${shown} ${what} loaded.`}
      </p>
      {more && (
        <button type="button" class="secondary" onClick={onMore} disabled={loading} data-action="load-more">
          {loading ? 'Loading…' : `Load more ${what}`}
        </button>
      )}
      <ErrorNote error={error} />
    </div>
  );
}
