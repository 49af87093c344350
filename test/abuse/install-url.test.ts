/**
 * Abuse replay: the one-time install URL printed by `cluster create` / `rotate-psk`. Through the real relay with
 * curl (the printed line's fetch, run in sh as pasted): the first fetch answers the agent manifests with the PSK
 * inside (schema-valid YAML); a second fetch, concurrent fetches beyond the first, a link whose PSK expired or was
 * replaced, and guessed tokens are all refused with their own code; a HEAD (link scanners send one) answers 200
 * without using the link or counting as a failure; a source that keeps failing gets 429 while a valid link is still
 * served to it; no token, PSK or access key reaches the relay's log, JSON or pretty, even at debug level where every
 * request's URL is logged. (That the line keeps the URL out of every argv: install-command.test.ts.)
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, curl, RELAY_BIN, run, sleep, tempDir } from '../cli-harness.js';
import { validateYamlStream } from '../helpers/kubernetes-schema.js';
import { runPasted } from '../helpers/pasted-line.js';
import { api, logLines, type ServedRelay, serve } from './relay-fixture.js';
import { abuseScale } from './scale.js';

let relay: ServedRelay;

beforeAll(async () => {
  buildIfStale();
  // Debug level: the per-request lines (with the URL that holds the token) are logged, so their redaction is checked.
  relay = await serve(tempDir('abuse-install-url-'), undefined, ['--log-level', 'debug']);
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

interface Bootstrap {
  psk: string;
  installUrl: string;
  installCommand: string;
}

/** `tunnel-relay cluster create` (the CLI, as an operator runs it). */
async function createWithCli(name: string): Promise<Bootstrap> {
  const r = await run(RELAY_BIN, ['cluster', 'create', name, '--output', 'json'], relay.adminEnv);
  if (r.code !== 0) throw new Error(`cluster create ${name}: ${r.stderr}`);
  return JSON.parse(r.stdout).bootstrap;
}

/** The same through the API (no process start per cluster). */
async function create(name: string, body: Record<string, string> = {}): Promise<Bootstrap> {
  const r = await api(relay.ready.url, 'POST', '/api/v1/clusters', {
    token: relay.adminKey,
    body: { name, ...body },
  });
  if (r.status !== 201) throw new Error(`cluster create ${name}: ${r.status} ${r.text}`);
  return r.body.bootstrap;
}

/** The printed line up to kubectl (which needs a Kubernetes cluster), run as pasted into sh: the fetch alone. */
function fetchAsPrinted(installCommand: string) {
  expect(installCommand.endsWith(' | kubectl apply -f -')).toBe(true);
  return runPasted('sh', installCommand.slice(0, -' | kubectl apply -f -'.length));
}

/** A fetch of `url` from local address `from` (each 127.x address is its own source to the relay). */
async function fetchFrom(url: string, from = '127.0.0.1') {
  const r = await curl(['-sk', '--interface', from, '-w', '\n%{http_code}', url]);
  const cut = r.stdout.lastIndexOf('\n');
  const status = Number(r.stdout.slice(cut + 1));
  const body = r.stdout.slice(0, cut);
  return { status, body, code: status >= 400 ? (JSON.parse(body).error.code as string) : null };
}

describe('one-time install URL', () => {
  it('serves schema-valid agent manifests with the PSK once; the second fetch is refused', async () => {
    const b = await createWithCli('inst-once');
    expect(b.installCommand).toContain(b.installUrl);
    const first = await fetchAsPrinted(b.installCommand);
    expect(first.code, first.stderr).toBe(0);
    const docs = validateYamlStream(first.stdout);
    const secret = docs.find((d) => d.kind === 'Secret');
    expect(secret?.stringData).toEqual({ psk: b.psk });
    expect(docs.map((d) => d.kind)).toContain('StatefulSet');
    // What the agent needs to act as its callers: an expiring token mounted, impersonation of the cluster's groups.
    expect(first.stdout).toContain('expirationSeconds: 3600');
    expect(first.stdout).toContain('mountPath: /var/run/secrets/kubernetes.io/serviceaccount');
    const role = docs.find((d) => d.kind === 'ClusterRole');
    expect(JSON.stringify(role)).toContain('"tunnel-relay:group-editor:default"');
    expect(docs.filter((d) => d.kind === 'ClusterRoleBinding').map((d) => d.metadata.name)).toEqual([
      'tunnel-client-impersonator',
      'tunnel-relay:admin',
      'tunnel-relay:viewer',
      'tunnel-relay:group-editor:default',
    ]);

    const second = await fetchAsPrinted(b.installCommand);
    expect(second.stdout).toBe('');
    expect(second.stderr).toContain('curl: (22) The requested URL returned error: 410');
    expect(second.stderr).toContain('run tunnel-relay cluster rotate-psk inst-once for a new one');
    const again = await fetchFrom(b.installUrl);
    expect(again.status).toBe(410);
    expect(again.code).toBe('INSTALL_LINK_USED');
    expect(again.body).toContain('rotate-psk inst-once');
  });

  it('cluster create --print-install-command prints only the line (the local-cluster form)', async () => {
    const r = await run(
      RELAY_BIN,
      ['cluster', 'create', 'local-cluster', '--print-install-command'],
      relay.adminEnv,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')).toHaveLength(2);
    const line = r.stdout.trim();
    expect(line).toMatch(
      /^\{ echo 'url = "https:\/\/\S+\/api\/v1\/install\/tin_[A-Za-z0-9_-]{43}"' \| curl -fsS --insecure --pinnedpubkey sha256\/\/[A-Za-z0-9+/]{43}= -K - \|\| \{ \[ \$\? -eq 22 \] && echo "install link refused \(already used, expired or replaced\): run tunnel-relay cluster rotate-psk local-cluster for a new one" >&2; \}; \} \| kubectl apply -f -$/,
    );
    const fetched = await fetchAsPrinted(line);
    expect(fetched.code, fetched.stderr).toBe(0);
    const secret = validateYamlStream(fetched.stdout).find((d) => d.kind === 'Secret');
    expect(secret?.stringData).toEqual({ psk: expect.stringMatching(/^tpsk_/) });
  });

  it('a HEAD (a link scanner) neither uses the link nor counts as a failure; the GET after it is served once', async () => {
    const b = await create('inst-head');
    const source = '127.0.0.4';
    const heads = [
      b.installUrl,
      `${relay.ready.url}/api/v1/install/tin_${randomBytes(32).toString('base64url')}`,
    ];
    for (let i = 0; i < 12 + 2 * abuseScale(); i++) {
      const url = heads[i % heads.length] ?? '';
      const r = await curl(['-sk', '-I', '--interface', source, '-w', '%{http_code}', url]);
      const status = r.stdout.slice(r.stdout.lastIndexOf('\n') + 1);
      expect(status, r.stdout).toBe('200');
      expect(r.stdout.toLowerCase()).toContain('cache-control: no-store');
      expect(r.stdout.toLowerCase()).toContain('content-type: application/yaml');
    }
    // More HEADs than the failure budget (10) from one source: its guesses are still answered 404, not 429.
    const guess = await fetchFrom(
      `${relay.ready.url}/api/v1/install/tin_${randomBytes(32).toString('base64url')}`,
      source,
    );
    expect([guess.status, guess.code]).toEqual([404, 'NOT_FOUND']);
    const first = await fetchFrom(b.installUrl, source);
    expect(first.status).toBe(200);
    expect(first.body).toContain(b.psk);
    const second = await fetchFrom(b.installUrl, source);
    expect([second.status, second.code]).toEqual([410, 'INSTALL_LINK_USED']);
  });

  it('ends with its PSK: expired, or replaced by rotate-psk (whose own link works)', async () => {
    const short = await create('inst-expiring', { pskTtl: '1s' });
    await sleep(1_100);
    const expired = await fetchFrom(short.installUrl, '127.0.0.2');
    expect([expired.status, expired.code]).toEqual([410, 'INSTALL_LINK_EXPIRED']);

    const old = await create('inst-rotated');
    const r = await run(
      RELAY_BIN,
      ['cluster', 'rotate-psk', 'inst-rotated', '--output', 'json'],
      relay.adminEnv,
    );
    const rotated: Bootstrap = JSON.parse(r.stdout).bootstrap;
    const replaced = await fetchFrom(old.installUrl, '127.0.0.2');
    expect([replaced.status, replaced.code]).toEqual([410, 'INSTALL_LINK_EXPIRED']);
    const fresh = await fetchFrom(rotated.installUrl, '127.0.0.2');
    expect(fresh.status).toBe(200);
    expect(fresh.body).toContain(rotated.psk);
  });

  it('concurrent fetches of one link: exactly one gets the manifests', async () => {
    // Up to 24 curl processes at once (more starve two cores into handshake timeouts); more rounds at scale.
    const n = Math.min(24, 6 * abuseScale());
    for (let round = 0; round < Math.min(10, abuseScale() + 1); round++) {
      const b = await create(`inst-race-${round}`);
      const results = await Promise.all(
        Array.from({ length: n }, (_, i) => fetchFrom(b.installUrl, `127.0.${10 + round}.${1 + (i % 250)}`)),
      );
      expect(results.filter((x) => x.status === 200)).toHaveLength(1);
      expect(results.filter((x) => x.status !== 200).every((x) => x.code === 'INSTALL_LINK_USED')).toBe(true);
    }
  });

  it('guessed tokens: 404 until the source is out of failures, then 429; a valid link is still served', async () => {
    const source = '127.0.0.3';
    const guesses = [
      `tin_${randomBytes(32).toString('base64url')}`,
      'tin_short',
      `tpsk_${randomBytes(32).toString('base64url')}`,
      '..%2f..%2fetc%2fpasswd',
      `tin_${'A'.repeat(60)}`,
    ];
    const codes: string[] = [];
    for (let i = 0; i < 12 + 2 * abuseScale(); i++) {
      const guess = guesses[i % guesses.length] ?? '';
      const r = await fetchFrom(`${relay.ready.url}/api/v1/install/${guess}`, source);
      codes.push(`${r.status} ${r.code}`);
    }
    // The first ten failures are answered as such, then the source's failure budget is spent.
    expect(codes.slice(0, 10).every((c) => c === '404 NOT_FOUND')).toBe(true);
    expect(codes.slice(10).every((c) => c === '429 RATE_LIMITED')).toBe(true);
    const b = await create('inst-after-guesses');
    const ok = await fetchFrom(b.installUrl, source);
    expect(ok.status).toBe(200);
  });

  it('no token, PSK or access key in the relay log; the request line shows the URL redacted', async () => {
    const b = await create('inst-logs');
    await fetchFrom(b.installUrl);
    await fetchFrom(b.installUrl);
    const token = b.installUrl.slice(b.installUrl.lastIndexOf('/') + 1);
    const urls = logLines(relay.proc)
      .filter((l) => l.msg === 'incoming request' && l.level === 20)
      .map((l) => (l.req as { url?: unknown } | undefined)?.url);
    expect(urls.filter((u) => u === '/api/v1/install/tin_[REDACTED]').length).toBeGreaterThanOrEqual(2);
    expect(relay.proc.stderr).toContain('audit cluster.install-link inst-logs');
    for (const secret of [token, token.slice(4), b.psk, b.psk.slice(5), relay.adminKey])
      expect(relay.proc.stderr).not.toContain(secret);
  });

  it('the pretty log format redacts the same', async () => {
    const pretty = await serve(tempDir('abuse-install-url-pretty-'), undefined, [
      '--log-level',
      'debug',
      '--log-format',
      'pretty',
    ]);
    try {
      const r = await api(pretty.ready.url, 'POST', '/api/v1/clusters', {
        token: pretty.adminKey,
        body: { name: 'inst-pretty' },
      });
      expect(r.status, r.text).toBe(201);
      const b: Bootstrap = r.body.bootstrap;
      await fetchFrom(b.installUrl);
      await fetchFrom(b.installUrl);
      const token = b.installUrl.slice(b.installUrl.lastIndexOf('/') + 1);
      const requestLines = pretty.proc.stderr
        .split('\n')
        .filter((l) => l.includes(' DEBUG incoming request '));
      expect(
        requestLines.filter((l) => l.includes('/api/v1/install/tin_[REDACTED]')).length,
      ).toBeGreaterThanOrEqual(2);
      for (const secret of [token, token.slice(4), b.psk, b.psk.slice(5), pretty.adminKey])
        expect(pretty.proc.stderr).not.toContain(secret);
    } finally {
      await pretty.proc.stop();
    }
  });
});
