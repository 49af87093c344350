/**
 * The cluster page's agents (a cluster of agent replicas has several): each agent's state, address, path, RTT,
 * lease and version, read from GET /clusters/NAME again whenever the feed says how many are connected changed.
 * An agent that is not connected can be removed (an agent set scaled down: DELETE /clusters/NAME/agents/KEY, after
 * a confirmation naming its address).
 */
import { useState } from 'preact/hooks';
import { ErrorNote, StateBadge } from '../components/bits.js';
import { clusterPath } from '../lib/api.js';
import { useConsole } from '../lib/context.js';
import { age, when } from '../lib/format.js';
import { useLoad } from '../lib/hooks.js';
import type { Cluster } from '../lib/types.js';

export function ClusterAgents({ c, now }: { c: Cluster; now: number }) {
  const { api } = useConsole();
  const detail = useLoad(
    async () => (await api.get<Cluster>(clusterPath(c.name, ''))).agents ?? [],
    [c.name, c.agentsConnected, c.agentsRegistered, c.state],
  );
  const [confirming, setConfirming] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const removeAgent = async (publicKey: string) => {
    setError(null);
    try {
      await api.send('DELETE', clusterPath(c.name, `/agents/${encodeURIComponent(publicKey)}`));
      setConfirming(null);
      detail.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  if (detail.error) return <ErrorNote error={detail.error} />;
  const agents = detail.data ?? [];
  return (
    <>
      <p class="muted" data-agents-summary>
        {c.agentsConnected} of {c.agentsRegistered} agents connected ({c.agentReplicas} may join)
      </p>
      {agents.length > 0 && (
        <div class="table-wrap">
          <table data-agents>
            <thead>
              <tr>
                <th scope="col">State</th>
                <th scope="col">Address</th>
                <th scope="col">Path</th>
                <th scope="col">RTT</th>
                <th scope="col">Lease renewed</th>
                <th scope="col">Version</th>
                <th scope="col">Public key</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {agents.map((a) => (
                <tr key={a.publicKey} data-agent={a.address ?? a.publicKey} data-state={a.state}>
                  <td data-label="State">
                    <StateBadge state={a.state} />
                  </td>
                  <td data-label="Address">{a.address ?? '-'}</td>
                  <td data-label="Path">{a.path}</td>
                  <td data-label="RTT">{a.rttMs === null ? '-' : `${a.rttMs} ms`}</td>
                  <td data-label="Lease renewed" title={when(a.leaseRenewTime)}>
                    {age(a.leaseRenewTime, now)}
                  </td>
                  <td data-label="Version">{a.agentVersion ?? '-'}</td>
                  <td data-label="Public key" class="mono">
                    {a.publicKey}
                  </td>
                  <td data-label="Actions">
                    {!a.connected && confirming !== a.publicKey && (
                      <button
                        type="button"
                        class="secondary"
                        data-action="remove-agent"
                        onClick={() => setConfirming(a.publicKey)}
                      >
                        Remove…
                      </button>
                    )}
                    {confirming === a.publicKey && (
                      <span
                        class="actions"
                        role="alertdialog"
                        aria-label={`Remove agent ${a.address ?? a.publicKey}?`}
                      >
                        <button
                          type="button"
                          class="danger"
                          data-action="confirm-remove-agent"
                          onClick={() => removeAgent(a.publicKey)}
                        >
                          Remove agent {a.address ?? ''}
                        </button>
                        <button type="button" class="secondary" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorNote error={error} />
    </>
  );
}
