/** Agent values of one cluster: platform layer, the cluster layer (editable YAML, errors inline) and the merge. */
import { useEffect, useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { ApiError, clusterPath } from '../lib/api.js';
import { useConsole } from '../lib/context.js';
import { useLoad } from '../lib/hooks.js';
import type { Cluster } from '../lib/types.js';
import type { YamlProblem } from '../lib/values-yaml.js';

const yamlLib = () => import('../lib/values-yaml.js');

export function ValuesPanel({ cluster }: { cluster: Cluster }) {
  const { api, can } = useConsole();
  const [round, setRound] = useState(0);
  const platform = useLoad(async () => {
    if (!can.readPlatformValues) return null;
    const { toYaml } = await yamlLib();
    return toYaml(await api.get('/api/v1/values'));
  }, [round]);
  // The merged document holds the platform values: read under their roles (admin, viewer), as the relay does.
  const merged = useLoad(
    async () => (can.readPlatformValues ? api.text(`/clusters/${encodeURIComponent(cluster.name)}`) : null),
    [cluster.name, round],
  );
  return (
    <div class="values">
      <div class="values-pane">
        <h3 id="values-platform">Platform</h3>
        {can.readPlatformValues ? (
          <pre>{platform.data ?? ''}</pre>
        ) : (
          <p class="muted">Your role cannot read the platform values.</p>
        )}
        <ErrorNote error={platform.error} />
      </div>
      <ClusterLayer cluster={cluster} onSaved={() => setRound((r) => r + 1)} />
      <div class="values-pane">
        <h3 id="values-merged">Merged (what the agent gets)</h3>
        {can.readPlatformValues ? (
          <pre data-values="merged">{merged.data ?? ''}</pre>
        ) : (
          <p class="muted">Your role cannot read the platform values, which the merge holds.</p>
        )}
        <ErrorNote error={merged.error} />
      </div>
    </div>
  );
}

function ClusterLayer({ cluster, onSaved }: { cluster: Cluster; onSaved(): void }) {
  const { api, can } = useConsole();
  const editable = can.writeCluster(cluster.group);
  const [text, setText] = useState<string | null>(null);
  const [problems, setProblems] = useState<YamlProblem[]>([]);
  const [saved, setSaved] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    Promise.all([yamlLib(), api.get(clusterPath(cluster.name, '/values'))]).then(
      ([{ toYaml }, v]) => live && setText(toYaml(v)),
      (e: Error) => live && setLoadError(e.message),
    );
    return () => {
      live = false;
    };
  }, [api, cluster.name]);
  const save = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const { parseValues } = await yamlLib();
    const parsed = parseValues(text ?? '');
    if (!parsed.ok) {
      setProblems(parsed.problems);
      return;
    }
    try {
      await api.send('PUT', clusterPath(cluster.name, '/values'), parsed.value);
      setProblems([]);
      setSaved(true);
      onSaved();
    } catch (err) {
      const code = err instanceof ApiError ? `${err.code}: ` : '';
      setProblems([{ line: null, column: null, message: `${code}${(err as Error).message}` }]);
    }
  };
  return (
    <form class="values-pane" onSubmit={save}>
      <label for="values-cluster">
        <h3>Cluster layer{editable ? ' (YAML, editable)' : ''}</h3>
      </label>
      <textarea
        id="values-cluster"
        rows={10}
        spellcheck={false}
        readOnly={!editable}
        value={text ?? ''}
        aria-invalid={problems.length > 0 ? 'true' : 'false'}
        aria-describedby="values-problems"
        onInput={(e) => {
          setText(e.currentTarget.value);
          setSaved(false);
        }}
      />
      <ul id="values-problems" class="problems" role="alert" data-values="problems">
        {problems.map((p, i) => (
          <li key={i}>
            {p.line !== null ? `line ${p.line}, column ${p.column}: ` : ''}
            {p.message}
          </li>
        ))}
      </ul>
      <ErrorNote error={loadError} />
      {editable && (
        <div class="actions">
          <button type="submit">Save cluster values</button>
          {saved && <span role="status">Saved.</span>}
        </div>
      )}
    </form>
  );
}
