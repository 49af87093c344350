/**
 * Pending approvals (double opt-in): agents that registered with a bootstrap key wait here until accepted or
 * denied. Each shows the name it claimed, its key fingerprint and the address it registered from (from the
 * audit log's `cluster.register` row, for roles that may read it). It lists those among the clusters read so far
 * (use-clusters.ts); "Load more clusters" reads the next page.
 */
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { LoadMore } from '../components/load-more.js';
import { clusterPath } from '../lib/api.js';
import { useConsole } from '../lib/context.js';
import { keyFingerprint } from '../lib/fingerprint.js';
import { age, when } from '../lib/format.js';
import { useLoad, useNow } from '../lib/hooks.js';
import { clusterHref } from '../lib/router.js';
import type { AuditItem, Cluster } from '../lib/types.js';
import { Claims } from './cluster.js';

export function ApprovalsPage() {
  const { clusters, api, can, more, loadMore, loadingMore, listError } = useConsole();
  const waiting = [...clusters.values()]
    .filter((c) => c.status === 'Pending' && c.publicKey !== null)
    .sort((a, b) => a.name.localeCompare(b.name));
  const names = waiting.map((c) => c.name).join(',');
  const audit = useLoad(async () => {
    if (!can.readAudit || waiting.length === 0) return [];
    return (await api.get<{ items: AuditItem[] }>('/api/v1/audit?limit=1000')).items;
  }, [names]);
  return (
    <section aria-labelledby="approvals-title">
      <h1 id="approvals-title">Pending approvals</h1>
      {waiting.length === 0 && (
        <p class="muted">
          {more
            ? 'No agent is waiting among the clusters loaded so far.'
            : 'No agent is waiting for approval.'}
        </p>
      )}
      <ul class="cards">
        {waiting.map((c) => (
          <PendingCard
            key={c.name}
            c={c}
            registration={
              audit.data?.find((a) => a.action === 'cluster.register' && a.target === c.name) ?? null
            }
          />
        ))}
      </ul>
      {more && (
        <LoadMore
          what="clusters"
          shown={clusters.size}
          more={more}
          loading={loadingMore}
          error={listError}
          onMore={loadMore}
        />
      )}
    </section>
  );
}

function PendingCard({ c, registration }: { c: Cluster; registration: AuditItem | null }) {
  const { api, can, upsert } = useConsole();
  const now = useNow();
  const [fp, setFp] = useState('');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (c.publicKey) keyFingerprint(c.publicKey).then(setFp, () => setFp('(not a valid key)'));
  }, [c.publicKey]);
  const decide = async (verb: 'accept' | 'deny') => {
    setError(null);
    try {
      upsert(await api.send<Cluster>('POST', clusterPath(c.name, `/${verb}`)));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <li class="card" data-pending={c.name}>
      <h2>
        <a href={clusterHref(c.name)}>{c.name}</a>
      </h2>
      <dl class="facts">
        <dt>Claimed name</dt>
        <dd>{c.name}</dd>
        <dt>Key fingerprint</dt>
        <dd class="mono" data-field="fingerprint">
          {fp}
        </dd>
        <dt>Public key</dt>
        <dd class="mono">{c.publicKey}</dd>
        <dt>Source address</dt>
        <dd data-field="source">
          {registration ? registration.source : can.readAudit ? '-' : 'not visible to your role'}
        </dd>
        <dt>Registered</dt>
        <dd title={when(registration?.at)}>{age(registration?.at ?? c.createdAt, now)}</dd>
        <dt>Agent version</dt>
        <dd>{c.agentVersion ?? '-'}</dd>
      </dl>
      <Claims claims={c.claims} />
      {can.writeCluster(c.group) && (
        <div class="actions">
          <button type="button" onClick={() => decide('accept')} aria-label={`Accept ${c.name}`}>
            Accept
          </button>
          <button type="button" class="danger" onClick={() => decide('deny')} aria-label={`Deny ${c.name}`}>
            Deny
          </button>
        </div>
      )}
      <ErrorNote error={error} />
    </li>
  );
}
