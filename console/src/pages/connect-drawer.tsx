/**
 * Connect drawer: Display Name (required), Kubernetes name (generated as a DNS-1123 label when left empty, checked as
 * you type), group and the agent's upstream (its API server URL, written into the join command as `--upstream`, as
 * `tunnel-relay cluster create --upstream` does); on create it shows the join and install commands with the PSK's expiry, follows the agent
 * live (registered, accepted, tunnel up, path) and ends with the kubeconfig command.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatRtt } from '../../../shared/kit/rtt-text.js';
import { ErrorNote, rttOf } from '../components/bits.js';
import { CommandBox } from '../components/copy-button.js';
import { useConsole } from '../lib/context.js';
import { age, when } from '../lib/format.js';
import { useNow } from '../lib/hooks.js';
import { nameFromDisplayName, nameProblem } from '../lib/names.js';
import { clusterHref } from '../lib/router.js';
import type { Bootstrap, Cluster } from '../lib/types.js';

interface Created {
  cluster: Cluster;
  bootstrap: Bootstrap;
}

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex="0"]';

/** Tab and Shift+Tab cycle inside the open drawer (a modal dialog) instead of reaching the page behind it. */
function keepFocusIn(box: HTMLElement, e: KeyboardEvent): void {
  const items = [...box.querySelectorAll<HTMLElement>(FOCUSABLE)];
  const first = items[0];
  const last = items[items.length - 1];
  if (!first || !last) return;
  const inside = box.contains(document.activeElement);
  if (e.shiftKey && (document.activeElement === first || !inside)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (document.activeElement === last || !inside)) {
    e.preventDefault();
    first.focus();
  }
}

export function ConnectDrawer({ onClose }: { onClose(): void }) {
  const [created, setCreated] = useState<Created | null>(null);
  const first = useRef<HTMLInputElement>(null);
  const drawer = useRef<HTMLDivElement>(null);
  // The parent re-renders every second (ages) with a new onClose; the effect must run once per opening.
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    first.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close.current();
      else if (e.key === 'Tab' && drawer.current) keepFocusIn(drawer.current, e);
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="drawer-backdrop">
      <div class="drawer" role="dialog" aria-modal="true" aria-labelledby="connect-title" ref={drawer}>
        <div class="page-head">
          <h2 id="connect-title">Connect a cluster</h2>
          <button type="button" class="secondary" onClick={onClose}>
            Close
          </button>
        </div>
        {created ? <Follow created={created} /> : <CreateForm firstRef={first} onCreated={setCreated} />}
      </div>
    </div>
  );
}

function CreateForm({
  firstRef,
  onCreated,
}: {
  firstRef: { current: HTMLInputElement | null };
  onCreated(c: Created): void;
}) {
  const { api, can, clusters, upsert } = useConsole();
  const [displayName, setDisplayName] = useState('');
  const [name, setName] = useState('');
  const [group, setGroup] = useState(can.fixedGroup ?? 'default');
  const [upstream, setUpstream] = useState('');
  const [nameless, setNameless] = useState(false);
  const [replicas, setReplicas] = useState('1');
  const replicasProblem = /^([1-9]|10)$/.test(replicas) ? null : 'a whole number from 1 to 10';
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const generated = nameFromDisplayName(displayName, new Set(clusters.keys()));
  const effective = name === '' ? generated : name;
  const problem = name === '' ? null : nameProblem(name);
  const groupProblem = nameProblem(group);
  const taken = clusters.has(effective) ? `a cluster named ${effective} exists` : null;
  const submit = async (e: Event) => {
    e.preventDefault();
    if (displayName.trim() === '') {
      setNameless(true);
      firstRef.current?.focus();
      return;
    }
    if (problem || groupProblem || taken || replicasProblem) return;
    setBusy(true);
    setError(null);
    try {
      const body: Record<string, string | number> = {
        name: effective,
        group,
        displayName: displayName.trim(),
      };
      if (upstream.trim() !== '') body.upstream = upstream.trim();
      if (replicas !== '1') body.agentReplicas = Number(replicas);
      const res = await api.send<Created>('POST', '/api/v1/clusters', body);
      upsert(res.cluster);
      onCreated(res);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} class="stack">
      <label for="display-name">Display Name</label>
      <input
        id="display-name"
        ref={firstRef}
        value={displayName}
        aria-invalid={nameless ? 'true' : 'false'}
        aria-describedby={nameless ? 'display-name-help' : undefined}
        onInput={(e) => {
          setDisplayName(e.currentTarget.value);
          if (e.currentTarget.value.trim() !== '') setNameless(false);
        }}
        maxLength={200}
      />
      {nameless && (
        <p id="display-name-help" class="error" role="alert">
          Enter a display name: it is how the cluster shows in this console, and its Kubernetes name is made
          from it.
        </p>
      )}
      <label for="cluster-name">Kubernetes Name (ID)</label>
      <input
        id="cluster-name"
        value={name}
        placeholder={generated}
        aria-describedby="cluster-name-help"
        aria-invalid={problem || taken ? 'true' : 'false'}
        onInput={(e) => setName(e.currentTarget.value)}
        spellcheck={false}
      />
      <p
        id="cluster-name-help"
        class={problem || taken ? 'error' : 'muted'}
        role={problem || taken ? 'alert' : undefined}
      >
        {problem ? `Not a DNS-1123 name: ${problem}` : taken ? taken : `Will be created as ${effective}`}
      </p>
      <label for="cluster-group">Group</label>
      <input
        id="cluster-group"
        value={group}
        disabled={can.fixedGroup !== null}
        onInput={(e) => setGroup(e.currentTarget.value)}
        aria-describedby="cluster-group-help"
        spellcheck={false}
      />
      {groupProblem && (
        <p id="cluster-group-help" class="error" role="alert">
          Not a DNS-1123 name: {groupProblem}
        </p>
      )}
      <label for="cluster-upstream">Upstream (optional)</label>
      <input
        id="cluster-upstream"
        inputMode="url"
        value={upstream}
        placeholder="https://10.0.0.1:6443"
        aria-describedby="cluster-upstream-help"
        onInput={(e) => setUpstream(e.currentTarget.value)}
        spellcheck={false}
      />
      <p id="cluster-upstream-help" class="muted">
        The API server the agent serves, written into the join command as --upstream. Leave it empty for an
        agent installed in the cluster (it uses the API server of its pod).
      </p>
      <label for="agent-replicas">Agent replicas</label>
      <input
        id="agent-replicas"
        type="number"
        min={1}
        max={10}
        value={replicas}
        onInput={(e) => setReplicas(e.currentTarget.value)}
        aria-describedby="agent-replicas-help"
        aria-invalid={replicasProblem ? 'true' : 'false'}
      />
      <p
        id="agent-replicas-help"
        class={replicasProblem ? 'error' : 'muted'}
        role={replicasProblem ? 'alert' : undefined}
      >
        {replicasProblem
          ? `Agent replicas: ${replicasProblem}`
          : 'Agents that may join with the PSK, each with its own key (run them with manifests agent --replicas)'}
      </p>
      <ErrorNote error={error} />
      <button
        type="submit"
        disabled={
          busy || problem !== null || groupProblem !== null || taken !== null || replicasProblem !== null
        }
      >
        Create cluster
      </button>
    </form>
  );
}

function Step({ done, label, detail }: { done: boolean; label: string; detail?: string }) {
  return (
    <li class={done ? 'step done' : 'step'} data-step={label} data-done={String(done)}>
      <span aria-hidden="true">{done ? '✓' : '…'}</span> {label}
      {detail ? <span class="muted"> {detail}</span> : null}
      <span class="sr-only">{done ? ' (done)' : ' (waiting)'}</span>
    </li>
  );
}

function pathText(c: Cluster): string {
  const ms = rttOf(c);
  return `${c.path}${ms !== null ? ` · ${formatRtt(ms)}` : ''}`;
}

function Follow({ created }: { created: Created }) {
  const { clusters } = useConsole();
  const now = useNow();
  const name = created.cluster.name;
  const c = clusters.get(name) ?? created.cluster;
  const registered = c.publicKey !== null;
  const accepted = registered && c.status === 'Accepted';
  const up = c.connected;
  return (
    <div class="stack" data-created={name}>
      <p>
        Cluster <a href={clusterHref(name)}>{name}</a> created. Run one of these where the cluster's agent
        will live:
      </p>
      <h3>Cluster Connection</h3>
      <CommandBox id="join" title="Join command (tunnel-client)" command={created.bootstrap.joinCommand} />
      <CommandBox
        id="install"
        title="Install in Kubernetes (kubectl)"
        command={created.bootstrap.installCommand}
      />
      <p class="muted" data-field="psk-expiry">
        The PSK in these commands works once and expires {when(created.bootstrap.expiresAt)} (
        {age(created.bootstrap.expiresAt, now)}). It is not shown again: rotate it from the cluster page if it
        is lost.
      </p>
      <h3>Agent</h3>
      <ol class="steps" aria-live="polite">
        <Step done={registered} label="Registered" />
        <Step done={accepted} label="Accepted" />
        <Step done={up} label="Tunnel up" />
        <Step done={up && c.path !== 'none'} label="Path" detail={up ? pathText(c) : ''} />
      </ol>
      {up && (
        <CommandBox
          id="kubeconfig"
          title="Next: a kubeconfig through the relay"
          command={`tunnel-relay kubeconfig ${name} --merge`}
        />
      )}
    </div>
  );
}
