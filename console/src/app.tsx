/** The console shell: sign-in, then the navigation, the live cluster set and the page for the route. */
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { type Api, makeApi } from './lib/api.js';
import { Console, type ConsoleState } from './lib/context.js';
import { abilitiesOf } from './lib/roles.js';
import { type Route, useRoute } from './lib/router.js';
import { forgetKey, savedKey, saveKey } from './lib/session.js';
import type { WhoAmI } from './lib/types.js';
import { useClusters } from './lib/use-clusters.js';
import { AccessKeysPage } from './pages/access-keys.js';
import { ApprovalsPage } from './pages/approvals.js';
import { AuditPage } from './pages/audit.js';
import { ClusterPage } from './pages/cluster.js';
import { ClustersPage } from './pages/clusters.js';
import { SignIn } from './pages/sign-in.js';

interface Session {
  api: Api;
  me: WhoAmI;
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(savedKey() !== null);
  const signOut = useCallback(() => {
    forgetKey();
    setSession(null);
  }, []);
  const signIn = useCallback(
    async (key: string): Promise<WhoAmI> => {
      const api = makeApi(key, signOut);
      const me = await api.get<WhoAmI>('/api/v1/whoami');
      return me;
    },
    [signOut],
  );
  const accept = (key: string, me: WhoAmI) => {
    saveKey(key);
    setSession({ api: makeApi(key, signOut), me });
  };
  useEffect(() => {
    const key = savedKey();
    if (key === null) return;
    signIn(key).then(
      (me) => accept(key, me),
      () => forgetKey(),
    );
    setRestoring(false);
  }, []);
  if (session) return <SignedIn session={session} signOut={signOut} />;
  if (restoring) return <p class="loading">Signing in…</p>;
  return <SignIn check={signIn} onSignedIn={accept} />;
}

function SignedIn({ session, signOut }: { session: Session; signOut: () => void }) {
  const route = useRoute();
  const live = useClusters(session.api);
  const state: ConsoleState = useMemo(
    () => ({ api: session.api, me: session.me, can: abilitiesOf(session.me), ...live }),
    [
      session,
      live.clusters,
      live.loaded,
      live.more,
      live.loadingMore,
      live.listError,
      live.feed,
      live.loadMore,
      live.upsert,
      live.remove,
    ],
  );
  const pending = [...live.clusters.values()].filter(
    (c) => c.status === 'Pending' && c.publicKey !== null,
  ).length;
  return (
    <Console.Provider value={state}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Tunnel relay</span>
        <nav aria-label="Main">
          <NavLink route={route} page="clusters" href="#/clusters" label="Clusters" />
          <NavLink
            route={route}
            page="approvals"
            href="#/approvals"
            label={`Approvals${pending ? ` (${pending})` : ''}`}
          />
          {state.can.manageKeys && <NavLink route={route} page="keys" href="#/keys" label="Access keys" />}
          {state.can.readAudit && <NavLink route={route} page="audit" href="#/audit" label="Audit log" />}
        </nav>
        <span class="who" title={`key ${session.me.keyId}`}>
          {session.me.role}
        </span>
        <span class={`feed feed-${live.feed.mode}`} role="status" title={live.feed.detail ?? ''}>
          {live.feed.mode}
        </span>
        <button type="button" class="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </Console.Provider>
  );
}

function NavLink({ route, page, href, label }: { route: Route; page: string; href: string; label: string }) {
  const current = route.page === page || (page === 'clusters' && route.page === 'cluster');
  return (
    <a href={href} aria-current={current ? 'page' : undefined}>
      {label}
    </a>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'cluster':
      return <ClusterPage name={route.name} />;
    case 'approvals':
      return <ApprovalsPage />;
    case 'keys':
      return <AccessKeysPage />;
    case 'audit':
      return <AuditPage />;
    default:
      return <ClustersPage />;
  }
}
