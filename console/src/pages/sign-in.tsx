/** Sign-in with an access key: checked with GET /api/v1/whoami, then kept for this tab only. */
import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { consoleRefusal } from '../lib/roles.js';
import type { WhoAmI } from '../lib/types.js';

export function SignIn(props: {
  check(key: string): Promise<WhoAmI>;
  onSignedIn(key: string, me: WhoAmI): void;
}) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const trimmed = key.trim();
    if (!trimmed.startsWith('trk_')) {
      setError(
        'an access key starts with trk_ (tunnel-relay token create, the key printed at first start, or tunnel-relay admin-key create)',
      );
      return;
    }
    setBusy(true);
    try {
      const me = await props.check(trimmed);
      const refusal = consoleRefusal(me);
      if (refusal) setError(refusal);
      else props.onSignedIn(trimmed, me);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <h1>Tunnel relay console</h1>
      <form onSubmit={submit} aria-describedby="signin-note">
        <label for="access-key">Access key</label>
        <input
          id="access-key"
          name="access-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <div class="muted" id="signin-note" data-field="key-sources">
          <p>Where an access key (trk_…) comes from:</p>
          <ul>
            <li>the admin key the relay prints at its first start;</li>
            <li>
              an admin makes one with{' '}
              <code>tunnel-relay token create --role admin|viewer|group-editor:GROUP</code> or on this
              console's Access keys page;
            </li>
            <li>
              with no admin key left, <code>tunnel-relay admin-key create</code> on the relay's host makes one
              from its store.
            </li>
          </ul>
          <p>
            Keys in a kubeconfig from <code>tunnel-relay kubeconfig</code> and bootstrap keys cannot sign in.
            The key stays in this tab (session storage) and is sent only as an Authorization header to this
            relay.
          </p>
        </div>
      </form>
    </main>
  );
}
