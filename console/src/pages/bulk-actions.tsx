/**
 * Bulk actions on the rows selected in the Clusters table: accept (those an agent registered that are not Accepted)
 * and delete, each after a confirmation naming every cluster it changes. The calls go one at a time; a refusal is
 * listed with its cluster and the rest still run.
 */
import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { clusterPath } from '../lib/api.js';
import { useConsole } from '../lib/context.js';
import type { Cluster } from '../lib/types.js';

type Verb = 'accept' | 'delete';

const acceptable = (c: Cluster) => c.status !== 'Accepted' && c.publicKey !== null;
const plural = (n: number) => `${n} cluster${n === 1 ? '' : 's'}`;

export function BulkActions({ selected, onDone }: { selected: readonly Cluster[]; onDone(): void }) {
  const { api, upsert, remove } = useConsole();
  const [confirming, setConfirming] = useState<Verb | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const toAccept = selected.filter(acceptable);
  const targets = confirming === 'accept' ? toAccept : selected;
  const run = async (verb: Verb, rows: readonly Cluster[]) => {
    setBusy(true);
    const failed: string[] = [];
    for (const c of rows) {
      try {
        if (verb === 'accept') upsert(await api.send<Cluster>('POST', clusterPath(c.name, '/accept')));
        else {
          await api.send('DELETE', clusterPath(c.name));
          remove(c.name);
        }
      } catch (err) {
        failed.push(`${c.name}: ${(err as Error).message}`);
      }
    }
    setBusy(false);
    setConfirming(null);
    setError(failed.length > 0 ? `${verb} failed for ${failed.join('; ')}` : null);
    onDone();
  };
  return (
    <div class="stack">
      <div class="bulk" data-bulk>
        <span class="muted">{selected.length} selected</span>
        <button
          type="button"
          disabled={toAccept.length === 0 || busy}
          onClick={() => setConfirming('accept')}
        >
          Accept selected ({toAccept.length})
        </button>
        <button
          type="button"
          class="danger"
          disabled={selected.length === 0 || busy}
          onClick={() => setConfirming('delete')}
        >
          Delete selected ({selected.length})
        </button>
      </div>
      <ErrorNote error={error} />
      {confirming && (
        <div class="confirm" role="alertdialog" aria-labelledby="bulk-title" aria-describedby="bulk-desc">
          <h3 id="bulk-title">
            {confirming === 'accept' ? 'Accept' : 'Delete'} {plural(targets.length)}?
          </h3>
          <p id="bulk-desc">
            {confirming === 'accept'
              ? 'Their agents get their tunnel addresses and connect.'
              : "Their agents' sessions close and their credentials stop working. This cannot be undone."}
          </p>
          <ul data-bulk-targets>
            {targets.map((c) => (
              <li key={c.name}>
                {c.displayName && c.displayName !== c.name ? `${c.displayName} (${c.name})` : c.name}
              </li>
            ))}
          </ul>
          <div class="actions">
            <button
              type="button"
              class={confirming === 'delete' ? 'danger' : ''}
              disabled={busy}
              onClick={() => void run(confirming, targets)}
            >
              {confirming === 'accept' ? 'Accept' : 'Delete'} {plural(targets.length)}
            </button>
            <button type="button" class="secondary" onClick={() => setConfirming(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
