/**
 * One cluster: overview, conditions with reasons and transition times, claims, agent values (platform, cluster
 * layer editable as YAML, merged), rotate PSK, accept/deny, delete with confirmation. A cluster outside the pages
 * read so far (a link to it) is read on its own, then kept current by the feed as the others.
 */
import { useEffect, useState } from 'preact/hooks';
import { formatRtt } from '../../../shared/kit/rtt-text.js';
import { ErrorNote, PathCell, ReasonText, StateBadge, StatusBadge } from '../components/bits.js';
import { CommandBox } from '../components/copy-button.js';
import { ApiError, clusterPath } from '../lib/api.js';
import { useConsole } from '../lib/context.js';
import { age, latest, when } from '../lib/format.js';
import { useLoad, useNow } from '../lib/hooks.js';
import type {
  Bootstrap,
  Cluster,
  ClusterWithBootstrap,
  PathDetail,
  PathHistory as PathHistoryBody,
} from '../lib/types.js';
import { ClusterAgents } from './cluster-agents.js';
import { ValuesPanel } from './values-panel.js';

/** Reads cluster `name` when the pages read so far do not hold it; its error (404: null with `missing`). */
function useClusterOutsidePages(name: string, held: boolean): { missing: boolean; error: string | null } {
  const { api, loaded, upsert } = useConsole();
  const [state, setState] = useState<{ missing: boolean; error: string | null }>({
    missing: false,
    error: null,
  });
  useEffect(() => {
    setState({ missing: false, error: null });
    if (held || !loaded) return;
    let live = true;
    api.get<Cluster>(clusterPath(name)).then(
      (c) => {
        if (live) upsert(c);
      },
      (err: Error) => {
        if (!live) return;
        const missing = err instanceof ApiError && err.status === 404;
        setState({ missing, error: missing ? null : err.message });
      },
    );
    return () => {
      live = false;
    };
  }, [name, held, loaded]);
  return state;
}

export function ClusterPage({ name }: { name: string }) {
  const { clusters } = useConsole();
  const c = clusters.get(name);
  const outside = useClusterOutsidePages(name, c !== undefined);
  if (!c) {
    const failed = outside.missing || outside.error !== null;
    return (
      <section>
        <p>
          <a href="#/clusters">← Clusters</a>
        </p>
        <p class={failed ? 'error' : 'muted'}>
          {outside.missing ? `No cluster named ${name}.` : (outside.error ?? 'Loading…')}
        </p>
      </section>
    );
  }
  return <ClusterDetail c={c} />;
}

/** Whether the agent acts as the calling relay user (GET /clusters/NAME: impersonation on/off, from the values). */
function Impersonation({ name }: { name: string }) {
  const { api } = useConsole();
  const detail = useLoad(() => api.get<Cluster>(clusterPath(name)), [name]);
  if (detail.error !== null) return <span class="error">{detail.error}</span>;
  const v = detail.data?.impersonation;
  if (v === undefined) return <span class="muted">…</span>;
  return v === 'on' ? (
    <span>
      the calling relay user (impersonation: tunnel-relay:&lt;key id&gt;, group tunnel-relay:&lt;role&gt;)
    </span>
  ) : (
    <span>the agent's service account for every caller (values: impersonate: false)</span>
  );
}

function ClusterDetail({ c }: { c: Cluster }) {
  const { can } = useConsole();
  const now = useNow();
  const seen = latest(c.lastHandshake, c.leaseRenewTime);
  return (
    <section aria-labelledby="cluster-title" data-cluster-page={c.name}>
      <p>
        <a href="#/clusters">← Clusters</a>
      </p>
      <div class="page-head">
        <h1 id="cluster-title">{c.displayName || c.name}</h1>
        <StatusBadge status={c.status} /> <StateBadge state={c.state} />
      </div>
      <dl class="facts">
        <dt>Name</dt>
        <dd>{c.name}</dd>
        <dt>Group</dt>
        <dd>{c.group}</dd>
        <dt>Path</dt>
        <dd>
          <PathCell c={c} />
        </dd>
        {c.pathDetail && <PathDetailFacts d={c.pathDetail} now={now} />}
        <dt>Agent version</dt>
        <dd>{c.agentVersion ?? '-'}</dd>
        <dt>Address</dt>
        <dd>{c.address ?? '-'}</dd>
        <dt>Public key</dt>
        <dd class="mono">{c.publicKey ?? '-'}</dd>
        <dt>Last seen</dt>
        <dd title={when(seen)}>{age(seen, now)}</dd>
        <dt>Created</dt>
        <dd title={when(c.createdAt)}>{age(c.createdAt, now)}</dd>
        <dt>Acts on the cluster as</dt>
        <dd data-impersonation>
          <Impersonation name={c.name} />
        </dd>
      </dl>
      {(c.agentReplicas > 1 || c.agentsRegistered > 1) && (
        <>
          <h2>Agents</h2>
          <ClusterAgents c={c} now={now} />
        </>
      )}
      <h2>Conditions</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">Reason</th>
              <th scope="col">Message</th>
              <th scope="col">Last transition</th>
            </tr>
          </thead>
          <tbody>
            {c.conditions.map((k) => (
              <tr key={k.type}>
                <td data-label="Type">{k.type}</td>
                <td data-label="Status">{k.status}</td>
                <td data-label="Reason">{k.reason}</td>
                <td data-label="Message">{k.message}</td>
                <td data-label="Last transition" title={when(k.lastTransitionTime)}>
                  {when(k.lastTransitionTime)} ({age(k.lastTransitionTime, now)})
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Path history</h2>
      <PathHistory c={c} now={now} />
      <h2>Claims</h2>
      <Claims claims={c.claims} />
      <h2>Agent values</h2>
      <ValuesPanel cluster={c} />
      <h2>Connect</h2>
      <CommandBox
        id="kubeconfig"
        title="Kubeconfig through the relay"
        command={`tunnel-relay kubeconfig ${c.name} --merge`}
      />
      {can.writeCluster(c.group) && <Actions c={c} />}
    </section>
  );
}

const ms = (v: number | null) => (v === null ? '-' : formatRtt(v));

function PathDetailFacts({ d, now }: { d: PathDetail; now: number }) {
  return (
    <>
      <dt>Direct remote</dt>
      <dd>{d.remote ?? '-'}</dd>
      <dt title="the hub's pings to the agent's direct address">RTT of the direct path</dt>
      <dd data-field="rtt-direct">{ms(d.rttDirectMs)}</dd>
      <dt title="the hub's pings to the agent through the relay">RTT of the relayed path</dt>
      <dd data-field="rtt-relayed">{ms(d.rttRelayedMs)}</dd>
      <dt>Last path switch</dt>
      <dd title={when(d.lastSwitch)}>{age(d.lastSwitch, now)}</dd>
      {d.reason && (
        <>
          <dt>Why not direct</dt>
          <dd data-field="path-reason">
            <ReasonText code={d.reason} />
            {d.reasonFrom ? ` (reported by the ${d.reasonFrom})` : ''}
          </dd>
        </>
      )}
    </>
  );
}

/** The agent's recent path changes, newest first; read again whenever the cluster's path changes. */
function PathHistory({ c, now }: { c: Cluster; now: number }) {
  const { api } = useConsole();
  const history = useLoad(
    async () => (await api.get<PathHistoryBody>(clusterPath(c.name, '/path-history'))).items,
    [c.name, c.path, c.pathDetail?.remote, c.pathDetail?.reason, c.pathDetail?.lastSwitch],
  );
  if (history.error) return <ErrorNote error={history.error} />;
  const items = history.data ?? [];
  if (items.length === 0) return <p class="muted">No path changes recorded yet.</p>;
  return (
    <div class="table-wrap">
      <table data-path-history>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Path</th>
            <th scope="col">Direct remote</th>
            <th scope="col">Why not direct</th>
          </tr>
        </thead>
        <tbody>
          {items.map((h) => (
            <tr key={`${h.at}-${h.path}-${h.remote ?? ''}-${h.reason ?? ''}-${h.reasonFrom ?? ''}`}>
              <td data-label="When" title={when(h.at)}>
                {age(h.at, now)}
              </td>
              <td data-label="Path">{h.path}</td>
              <td data-label="Direct remote">{h.remote ?? '-'}</td>
              <td data-label="Why not direct">
                {h.reason ? <ReasonText code={h.reason} /> : '-'}
                {h.reason && h.reasonFrom ? ` (reported by the ${h.reasonFrom})` : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Claims({ claims }: { claims: Record<string, string> }) {
  const entries = Object.entries(claims ?? {});
  if (entries.length === 0) return <p class="muted">No claims.</p>;
  return (
    <dl class="facts">
      {entries.map(([k, v]) => [<dt key={`k-${k}`}>{k}</dt>, <dd key={`v-${k}`}>{v}</dd>])}
    </dl>
  );
}

function Actions({ c }: { c: Cluster }) {
  const { api, upsert, remove } = useConsole();
  const [error, setError] = useState<string | null>(null);
  const [rotated, setRotated] = useState<Bootstrap | null>(null);
  const [confirming, setConfirming] = useState(false);
  const act = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const rotate = () =>
    act(async () => {
      const res = await api.send<ClusterWithBootstrap>('POST', clusterPath(c.name, '/rotate-psk'));
      upsert(res.cluster);
      setRotated(res.bootstrap);
    });
  const decide = (verb: 'accept' | 'deny') =>
    act(async () => upsert(await api.send<Cluster>('POST', clusterPath(c.name, `/${verb}`))));
  const del = () =>
    act(async () => {
      await api.send('DELETE', clusterPath(c.name));
      remove(c.name);
      location.hash = '#/clusters';
    });
  return (
    <div class="stack">
      <h2>Actions</h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={rotate}>
          Rotate PSK
        </button>
        {c.status !== 'Accepted' && c.publicKey !== null && (
          <button type="button" onClick={() => decide('accept')}>
            Accept
          </button>
        )}
        {c.status !== 'Denied' && c.publicKey !== null && (
          <button type="button" class="secondary" onClick={() => decide('deny')}>
            Deny
          </button>
        )}
        <button type="button" class="danger" onClick={() => setConfirming(true)}>
          Delete…
        </button>
      </div>
      <ErrorNote error={error} />
      {rotated && (
        <div class="stack">
          <p>
            The old PSK no longer works. New commands (shown once; the PSK expires {when(rotated.expiresAt)}):
          </p>
          <CommandBox id="join" title="Join command (tunnel-client)" command={rotated.joinCommand} />
          <CommandBox id="install" title="Install in Kubernetes (kubectl)" command={rotated.installCommand} />
        </div>
      )}
      {confirming && (
        <div class="confirm" role="alertdialog" aria-labelledby="delete-title" aria-describedby="delete-desc">
          <h3 id="delete-title">Delete {c.name}?</h3>
          <p id="delete-desc">
            Its agent's sessions close and its credential stops working. This cannot be undone.
          </p>
          <div class="actions">
            <button type="button" class="danger" onClick={del} data-action="confirm-delete">
              Delete {c.name}
            </button>
            <button type="button" class="secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </div>
  );
}
