/**
 * Access keys (admin): create (the key is shown once, with a copy button), list oldest first a page at a time
 * ("Load more access keys"), revoke.
 */
import { useState } from 'preact/hooks';
import { ErrorNote } from '../components/bits.js';
import { CommandBox } from '../components/copy-button.js';
import { LoadMore } from '../components/load-more.js';
import { useConsole } from '../lib/context.js';
import { age, when } from '../lib/format.js';
import { useNow } from '../lib/hooks.js';
import type { AccessKey, CreatedToken } from '../lib/types.js';
import { usePages } from '../lib/use-pages.js';

/** Keys per page (the relay's default page). */
const KEY_PAGE = 100;

const ROLES = ['viewer', 'admin', 'bootstrap', 'group-editor'] as const;

export function AccessKeysPage() {
  const { api, can } = useConsole();
  const keys = usePages<AccessKey>(api, '/api/v1/tokens', KEY_PAGE);
  if (!can.manageKeys) return <p>Only an admin key manages access keys.</p>;
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">Access keys</h1>
      <CreateKey onCreated={keys.reload} />
      <h2>Keys</h2>
      <ErrorNote error={keys.error} />
      {keys.loaded && (
        <>
          <KeyTable keys={keys.items} onChanged={keys.reload} />
          <LoadMore
            what="access keys"
            shown={keys.items.length}
            more={keys.more}
            loading={keys.loading}
            onMore={keys.loadMore}
          />
        </>
      )}
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated(): void }) {
  const { api } = useConsole();
  const [role, setRole] = useState<string>('viewer');
  const [group, setGroup] = useState('');
  const [description, setDescription] = useState('');
  const [expiresIn, setExpiresIn] = useState('');
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const body: Record<string, string> = { role: role === 'group-editor' ? `group-editor:${group}` : role };
      if (description) body.description = description;
      if (expiresIn) body.expiresIn = expiresIn;
      setCreated(await api.send<CreatedToken>('POST', '/api/v1/tokens', body));
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form class="stack narrow" onSubmit={submit}>
      <h2>Create a key</h2>
      <label for="key-role">Role</label>
      <select id="key-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      {role === 'group-editor' && (
        <>
          <label for="key-group">Group</label>
          <input id="key-group" value={group} onInput={(e) => setGroup(e.currentTarget.value)} required />
        </>
      )}
      <label for="key-description">Description</label>
      <input
        id="key-description"
        value={description}
        onInput={(e) => setDescription(e.currentTarget.value)}
        maxLength={200}
      />
      <label for="key-expires">Expires in (e.g. 30d; empty: never)</label>
      <input id="key-expires" value={expiresIn} onInput={(e) => setExpiresIn(e.currentTarget.value)} />
      <ErrorNote error={error} />
      <button type="submit">Create key</button>
      {created && (
        <div class="shown-once" data-created-key={created.id}>
          <p>
            Key {created.id} ({created.role}) created. Copy it now: it is not shown again.
          </p>
          <CommandBox id="new-key" title="Access key" command={created.token} />
        </div>
      )}
    </form>
  );
}

function KeyTable({ keys, onChanged }: { keys: AccessKey[]; onChanged(): void }) {
  const { api, me } = useConsole();
  const now = useNow(10_000);
  const [error, setError] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const revoke = async (id: string) => {
    setError(null);
    try {
      await api.send('DELETE', `/api/v1/tokens/${encodeURIComponent(id)}`);
      setConfirm(null);
      onChanged();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <ErrorNote error={error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">ID</th>
              <th scope="col">Role</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-key={k.id}>
                <td data-label="ID" class="mono">
                  {k.id}
                  {k.id === me.keyId ? ' (this key)' : ''}
                </td>
                <td data-label="Role">{k.role}</td>
                <td data-label="Description">{k.description}</td>
                <td data-label="Created" title={when(k.createdAt)}>
                  {age(k.createdAt, now)}
                </td>
                <td data-label="Expires">
                  {k.expiresAt ? `${when(k.expiresAt)} (${age(k.expiresAt, now)})` : 'never'}
                </td>
                <td data-label="State">{k.revokedAt ? `revoked ${age(k.revokedAt, now)}` : 'active'}</td>
                <td data-label="Actions">
                  {!k.revokedAt &&
                    (confirm === k.id ? (
                      <span class="actions">
                        <button type="button" class="danger" onClick={() => revoke(k.id)}>
                          Revoke {k.id}
                        </button>
                        <button type="button" class="secondary" onClick={() => setConfirm(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <button type="button" class="secondary" onClick={() => setConfirm(k.id)}>
                        Revoke…
                      </button>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
