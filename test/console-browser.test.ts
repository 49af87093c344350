/**
 * The web console in a real browser (Debian's chromium through playwright-core) against a real
 * `tunnel-relay serve`: sign in, create a cluster from a display name alone, run the join command the page
 * shows with the real tunnel-client and watch the row turn connected without a reload (timed), accept a
 * Pending bootstrap join from the approvals page, a viewer key (created on the access keys page) sees no
 * create button and its forged create is refused, a hostile display name stays text, bidi overrides and other
 * invisible characters in a display name and a claim show escaped as the CLI prints them, values YAML errors show
 * inline. Screenshots of the main pages go to a temporary directory, or docs/console with
 * CONSOLE_SCREENSHOTS_DIR=docs/console (`npm run screenshots`).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { api } from './abuse/relay-fixture.js';
import {
  adminEnvOf,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  ROOT,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { buildConsoleIfStale, launchChromium } from './console-harness.js';
import { type KubeApiServer, startKubeApiServer } from './helpers/kube-api/server.js';
import { makeCaSignedCert } from './helpers/test-cert.js';
import { waitFor } from './helpers/wait.js';

const XSS = '<img src=x onerror=alert(1)>';
const shotsDir = process.env.CONSOLE_SCREENSHOTS_DIR
  ? join(ROOT, process.env.CONSOLE_SCREENSHOTS_DIR)
  : tempDir('console-shots-');

let relay: Proc;
let ready: ReadyLine;
let browser: Browser;
let admin: { context: BrowserContext; page: Page };
const agents: Proc[] = [];
let kubeApi: KubeApiServer | undefined;
/** Content-Security-Policy reports, page errors and dialogs seen in any page: all must stay empty. */
const problems: string[] = [];

async function openPage(width = 1280, height = 860): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width, height } });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Every file the page asks for exists (the favicon included); API refusals are the tests' own business.
  page.on('response', (r) => {
    if (r.status() === 404 && !new URL(r.url()).pathname.startsWith('/api/'))
      problems.push(`404: ${r.url()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  return { context, page };
}

/** Runs `js` (an expression, in the page's own scope) and returns its value. */
function inPage<T = unknown>(page: Page, js: string): Promise<T> {
  return page.evaluate(js) as Promise<T>;
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${ready.url}/`);
  expect(new URL(page.url()).pathname).toBe('/ui/');
  await page.getByLabel('Access key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#clusters-title').waitFor();
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(shotsDir, { recursive: true });
  await page.screenshot({ path: join(shotsDir, `${name}.png`), fullPage: false });
}

/** The words of a shown command: leading NAME=value words become the environment. */
function commandOf(text: string): { env: Record<string, string>; args: string[] } {
  const words = text.trim().split(/\s+/);
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_]+=/.test(words[0])) {
    const w = words.shift()!;
    env[w.slice(0, w.indexOf('='))] = w.slice(w.indexOf('=') + 1);
  }
  expect(words.slice(0, 2)).toEqual(['tunnel-client', 'join']);
  return { env, args: words.slice(1) };
}

/**
 * The earliest the tunnel can have come up, as the relay reports it: the time the last request that still
 * answered `connected: false` was sent (the API is polled every 25 ms until it answers true). The row's delay
 * measured from it is an upper bound: it errs late, never early.
 */
async function tunnelUpBound(name: string, agent: Proc): Promise<number> {
  let lastDown = Date.now();
  const connected = async () => {
    const sent = Date.now();
    const r = await api(ready.url, 'GET', `/api/v1/clusters/${name}`, { token: ready.adminKey! });
    if (r.body.connected !== true) lastDown = sent;
    return r.body.connected === true;
  };
  await waitFor(connected, 20_000, 'the tunnel to come up', 25).catch((err: Error) => {
    throw new Error(`${err.message}\n${agent.stderr}`);
  });
  return lastDown;
}

beforeAll(async () => {
  buildConsoleIfStale();
  ({ proc: relay, ready } = await startServe(tempDir('console-browser-'), '127.0.0.1:0'));
  browser = await launchChromium();
  admin = await openPage();
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop('SIGKILL');
  await kubeApi?.close();
  await browser?.close();
  await relay?.stop();
  await cleanup();
});

describe('web console', () => {
  it('signs in with an access key kept for the tab only, with visible keyboard focus', async () => {
    const { page } = admin;
    await page.goto(`${ready.url}/`);
    await shot(page, 'sign-in');
    // The page says where a key comes from, with the real commands, and which keys cannot sign in.
    const sources = (await page.locator('[data-field="key-sources"]').textContent()) ?? '';
    for (const cmd of [
      'tunnel-relay token create --role',
      'tunnel-relay admin-key create',
      'tunnel-relay kubeconfig',
    ])
      expect(sources).toContain(cmd);
    expect(
      await inPage(page, `fetch(document.querySelector('link[rel=icon]').href).then((r) => r.status)`),
    ).toBe(200);
    await page.getByLabel('Access key').fill('trk_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toContain('missing, unknown, expired or revoked');
    await signIn(page, ready.adminKey!);
    const storage = await inPage(
      page,
      '({ session: Object.values(sessionStorage), local: localStorage.length, cookies: document.cookie })',
    );
    expect(storage).toEqual({ session: [ready.adminKey], local: 0, cookies: '' });
    expect(page.url()).not.toContain(ready.adminKey!);
    await page.keyboard.press('Tab');
    const focused = await inPage<{ text: string; outline: string }>(
      page,
      '({ text: document.activeElement.textContent, outline: getComputedStyle(document.activeElement).outlineStyle })',
    );
    expect(focused.text).toBe('Skip to content');
    expect(focused.outline).not.toBe('none');
  });

  it('creates a cluster from a display name alone; the join command it shows connects the row live', async () => {
    const { page } = admin;
    await page.getByRole('button', { name: 'Connect cluster' }).click();
    await page.getByLabel('Display Name').fill('Edge Lab 1');
    await expect
      .poll(() => page.locator('#cluster-name-help').textContent())
      .toBe('Will be created as edge-lab-1');
    await page.getByLabel('Kubernetes Name (ID)').fill('Edge_Lab');
    await expect
      .poll(() => page.locator('#cluster-name-help').textContent())
      .toContain('Not a DNS-1123 name');
    expect(await page.getByRole('button', { name: 'Create cluster' }).isDisabled()).toBe(true);
    // The page re-renders every second (ages): focus stays where the user is typing.
    await sleep(1200);
    expect(await inPage(page, 'document.activeElement.id')).toBe('cluster-name');
    await page.getByLabel('Kubernetes Name (ID)').fill('');
    await page.getByRole('button', { name: 'Create cluster' }).click();
    const joinText = (await page.locator('pre[data-command="join"]').textContent()) ?? '';
    const installText = (await page.locator('pre[data-command="install"]').textContent()) ?? '';
    expect(joinText).toContain('--cluster edge-lab-1');
    expect(joinText).toContain(`--ca-pin ${ready.caPin}`);
    // The install line keeps its one-time URL out of argv: curl reads it as config on stdin.
    expect(installText).toMatch(
      /^\{ echo 'url = "https:\/\/\S+\/api\/v1\/install\/tin_\S+"' \| curl .* -K - .*\| kubectl apply -f -$/,
    );
    expect(await page.locator('[data-field="psk-expiry"]').textContent()).toMatch(/expires .*\(in 2\d h\)/);
    // The row is there (Pending) before any agent runs.
    await page
      .locator('tr[data-cluster="edge-lab-1"][data-connected="false"]')
      .waitFor({ state: 'attached' });
    await inPage(
      page,
      `window.rowUps = [];
       let shown = 'false';
       new MutationObserver(() => {
         const now = document.querySelector('tr[data-cluster="edge-lab-1"]')?.dataset.connected;
         if (now === 'true' && shown !== 'true') window.rowUps.push(Date.now());
         shown = now;
       }).observe(document.body, { subtree: true, childList: true, attributes: true });`,
    );
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));

    const stateDir = join(tempDir('console-agent-'), 'agent');
    const cmd = commandOf(joinText);
    const joined = await run(
      CLIENT_BIN,
      // No UDP: the agent reports why it is relayed (443-only), which the cluster's pages show.
      [...cmd.args, '--state-dir', stateDir, '--egress', '443-only', '--wait'],
      cleanEnv(cmd.env),
      30_000,
    );
    expect(joined.code, joined.stderr).toBe(0);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
    agents.push(agent);
    const tunnelUpAt = await tunnelUpBound('edge-lab-1', agent);
    await page.locator('tr[data-cluster="edge-lab-1"][data-connected="true"]').waitFor({ state: 'attached' });
    // Every time the row turned connected; the first at or after the relay's last "disconnected" answer counts
    // (an earlier one means the session came up and dropped again before the relay's API saw it up).
    const rowUps = await inPage<number[]>(page, 'window.rowUps');
    const rowUpAt = rowUps.find((t) => t >= tunnelUpAt) ?? Number.POSITIVE_INFINITY;
    const feed = await page.locator('.feed').textContent();
    const ms = rowUpAt - tunnelUpAt;
    const earlier = rowUps.filter((t) => t < tunnelUpAt).length;
    console.log(
      `console: the row turned connected at most ${ms} ms after the tunnel came up (feed: ${feed}; ` +
        `${earlier} earlier connected spell(s) the API never showed)`,
    );
    expect(feed).toBe('live');
    expect(ms).toBeLessThanOrEqual(1000);
    expect(navigations).toEqual([]);
    // The drawer followed the agent and ends with the kubeconfig command.
    await page.locator('[data-step="Tunnel up"][data-done="true"]').waitFor();
    expect(await page.locator('pre[data-command="kubeconfig"]').textContent()).toBe(
      'tunnel-relay kubeconfig edge-lab-1 --merge',
    );
    await shot(page, 'connect-drawer');
    await page.keyboard.press('Escape');
    await page.locator('[role="dialog"]').waitFor({ state: 'detached' });
    await shot(page, 'clusters');
  }, 60_000);

  it('a hostile display name is shown as text: no element, no script', async () => {
    const { page } = admin;
    await page.getByRole('button', { name: 'Connect cluster' }).click();
    // The drawer is modal: Shift+Tab from its first field (focused once the drawer is up) stays inside it.
    await expect.poll(() => inPage(page, 'document.activeElement.id')).toBe('display-name');
    await page.keyboard.press('Shift+Tab');
    expect(await inPage(page, "document.activeElement.closest('[role=dialog]') !== null")).toBe(true);
    // No display name: refused with a message, nothing created (no cluster named `cluster`, no live PSK).
    const before = (await api(ready.url, 'GET', '/api/v1/clusters', { token: ready.adminKey! })).body.items
      .length;
    await page.getByRole('button', { name: 'Create cluster' }).click();
    await expect
      .poll(() => page.locator('#display-name-help').textContent())
      .toMatch(/^Enter a display name/);
    expect(await page.getByLabel('Display Name').getAttribute('aria-invalid')).toBe('true');
    expect(await inPage(page, 'document.activeElement.id')).toBe('display-name');
    await sleep(300);
    const after = (await api(ready.url, 'GET', '/api/v1/clusters', { token: ready.adminKey! })).body.items;
    expect(after.length).toBe(before);
    await page.getByLabel('Display Name').fill(XSS);
    await page.getByLabel('Upstream (optional)').fill('https://10.0.0.1:6443');
    await page.getByRole('button', { name: 'Create cluster' }).click();
    await page.locator('[data-created]').waitFor();
    // The upstream field is the CLI's `cluster create --upstream`: the join command carries it.
    expect(await page.locator('pre[data-command="join"]').textContent()).toContain(
      '--upstream https://10.0.0.1:6443',
    );
    await page.keyboard.press('Escape');
    // Closing returns focus to the button that opened it.
    await expect.poll(() => inPage(page, 'document.activeElement.dataset.action')).toBe('connect');
    const row = page.locator('tr[data-cluster="img-src-x-onerror-alert-1"] td[data-field="display-name"]');
    expect(await row.textContent()).toBe(XSS);
    await page.locator('a', { hasText: 'img-src-x-onerror-alert-1' }).click();
    expect(await page.locator('#cluster-title').textContent()).toBe(XSS);
    expect(await inPage(page, "document.querySelectorAll('img').length")).toBe(0);
    await page.getByRole('link', { name: '← Clusters' }).click();
  });

  it('shows bidi overrides and other invisible characters as escapes, as the CLI prints them', async () => {
    const { page } = admin;
    const spoof = 'staging \u202Edorp-ton\u202C';
    const escaped = 'staging \\u202edorp-ton\\u202c';
    const created = await api(ready.url, 'POST', '/api/v1/clusters', {
      token: ready.adminKey!,
      body: { name: 'bidi-name', displayName: spoof },
    });
    expect(created.status, created.text).toBe(201);
    const registered = await api(ready.url, 'POST', '/api/v1/register', {
      token: created.body.bootstrap.psk,
      body: {
        cluster: 'bidi-name',
        publicKey: keyToBase64(generateKeyPair().publicKey),
        agentVersion: '0.1.0',
        // The Kubernetes facts are claims too: ones that are not a version or a count are not shown as such.
        claims: {
          env: `prod\u200b\u2066${spoof}`,
          'kubernetes.version': `v1.30.0\u202e${XSS}`,
          'kubernetes.nodes': '99999999999',
        },
      },
    });
    expect(registered.status, registered.text).toBe(201);
    // The CLI's rendering of the same name is the reference.
    const cli = await run(RELAY_BIN, ['cluster', 'get', 'bidi-name'], adminEnvOf(ready));
    expect(cli.stdout.split('\n')).toContain(`display name:  ${escaped}`);
    await page.goto(`${ready.url}/ui/#/clusters`);
    const bidiRow = page.locator('tr[data-cluster="bidi-name"]');
    const cell = bidiRow.locator('td[data-field="display-name"]');
    await expect.poll(() => cell.textContent()).toBe(escaped);
    expect(await bidiRow.locator('td[data-field="kubernetes-version"]').textContent()).toBe('-');
    expect(await bidiRow.locator('td[data-field="nodes"]').textContent()).toBe('-');
    await page.locator('a', { hasText: 'bidi-name' }).click();
    expect(await page.locator('#cluster-title').textContent()).toBe(escaped);
    const claim = page.locator('dt', { hasText: /^env$/ }).locator('xpath=following-sibling::dd[1]');
    expect(await claim.textContent()).toBe(`prod\\u200b\\u2066${escaped}`);
    // Nowhere on the page is a bidi, zero-width or other format character left raw.
    expect(await inPage(page, String.raw`/[\p{Cf}]/u.test(document.body.innerText)`)).toBe(false);
    await page.getByRole('link', { name: '← Clusters' }).click();
  });

  it('accepts a Pending bootstrap join from the approvals page, showing name, fingerprint and source', async () => {
    const { page } = admin;
    const boot = JSON.parse(
      (
        await run(
          RELAY_BIN,
          ['token', 'create', '--role', 'bootstrap', '--output', 'json'],
          adminEnvOf(ready),
        )
      ).stdout,
    ) as { token: string };
    const stateDir = join(tempDir('console-boot-'), 'agent');
    const args = ['join', '--relay', ready.url, '--cluster', 'edge-boot', '--psk', boot.token];
    const joining = new Proc(
      CLIENT_BIN,
      [...args, '--ca-pin', ready.caPin, '--state-dir', stateDir, '--wait'],
      cleanEnv(),
    );
    agents.push(joining);
    await joining.waitFor((p) => /edge-boot is Pending/.test(p.stderr), 20_000, 'the Pending line');
    await page.getByRole('link', { name: /^Approvals/ }).click();
    const card = page.locator('[data-pending="edge-boot"]');
    await card.waitFor();
    const view = JSON.parse(
      (await run(RELAY_BIN, ['cluster', 'get', 'edge-boot', '--output', 'json'], adminEnvOf(ready))).stdout,
    ) as { publicKey: string };
    const fp = `SHA256:${createHash('sha256').update(Buffer.from(view.publicKey, 'base64')).digest('base64').replace(/=+$/, '')}`;
    await expect.poll(() => card.locator('[data-field="fingerprint"]').textContent()).toBe(fp);
    expect(await card.locator('[data-field="source"]').textContent()).toBe('127.0.0.1');
    await shot(page, 'approvals');
    await page.getByRole('button', { name: 'Accept edge-boot' }).click();
    expect(await Promise.race([joining.exited, sleep(20_000).then(() => 'timeout')])).toBe(0);
    await card.waitFor({ state: 'detached' });
  }, 45_000);

  it("shows why the agent is relayed, as the agent reported it, in the list and on the cluster's page", async () => {
    const { page } = admin;
    await page.goto(`${ready.url}/ui/#/clusters`);
    // In words, with the stable code as the tooltip.
    const words = '--egress 443-only: no UDP at all';
    const cell = page.locator('tr[data-cluster="edge-lab-1"] .path');
    await expect
      .poll(() => cell.textContent(), { timeout: 15_000 })
      .toMatch(/^relayed.* · --egress 443-only: /);
    expect(await cell.locator('[data-reason]').getAttribute('title')).toBe('443-only');
    await page.goto(`${ready.url}/ui/#/clusters/edge-lab-1`);
    await expect
      .poll(() => page.locator('[data-field="path-reason"]').textContent(), { timeout: 15_000 })
      .toBe(`${words} (reported by the agent)`);
    expect(await page.locator('[data-field="path-reason"] [data-reason]').getAttribute('title')).toBe(
      '443-only',
    );
    // The path history's newest entry says the same.
    const why = page
      .locator('[data-path-history] tbody tr')
      .first()
      .locator('td[data-label="Why not direct"]');
    await expect.poll(() => why.textContent(), { timeout: 15_000 }).toBe(`${words} (reported by the agent)`);
  });

  it('lists the Kubernetes version and node count the agent collects; sorts, filters by claim, colours relayed', async () => {
    const { page } = admin;
    // The agent's API server: the test API server over TLS with its own CA and a service-account token.
    const dir = tempDir('console-kube-');
    const cert = makeCaSignedCert('DNS:localhost,IP:127.0.0.1');
    kubeApi = await startKubeApiServer({
      cert: cert.cert,
      key: cert.key,
      authz: {
        tokens: new Set(['sa-token-1']),
        serviceAccount: 'system:serviceaccount:tunnel-client:tunnel-client',
        impersonableGroups: new Set(),
        bindings: new Map(),
        serviceAccountRights: new Set(['list nodes']),
      },
    });
    writeFileSync(join(dir, 'ca.crt'), cert.caCert);
    writeFileSync(join(dir, 'token'), 'sa-token-1\n');
    const env = cleanEnv({
      TUNNEL_CLIENT_UPSTREAM_CA: join(dir, 'ca.crt'),
      TUNNEL_CLIENT_UPSTREAM_TOKEN_FILE: join(dir, 'token'),
    });
    const created = await api(ready.url, 'POST', '/api/v1/clusters', {
      token: ready.adminKey!,
      body: { name: 'kube-facts', displayName: 'Kube facts' },
    });
    expect(created.status, created.text).toBe(201);
    const stateDir = join(dir, 'agent');
    const words = joinCommandWords(created.body.bootstrap.joinCommand);
    const joinArgs = ['--state-dir', stateDir, '--upstream', kubeApi.url, '--egress', '443-only', '--wait'];
    const joined = await run(CLIENT_BIN, [...words, ...joinArgs], env, 30_000);
    expect(joined.code, joined.stderr).toBe(0);
    const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], env);
    agents.push(agent);

    await page.goto(`${ready.url}/ui/#/clusters`);
    const row = page.locator('tr[data-cluster="kube-facts"]');
    await expect
      .poll(() => row.locator('td[data-field="nodes"]').textContent(), { timeout: 20_000 })
      .toBe('3');
    expect(await row.locator('td[data-field="kubernetes-version"]').textContent()).toBe(
      'v1.30.0+test-apiserver',
    );
    expect(kubeApi.seen.some((r) => r.url === '/api/v1/nodes?limit=1' && r.status === 200)).toBe(true);
    const cli = await run(RELAY_BIN, ['cluster', 'get', 'kube-facts'], adminEnvOf(ready));
    expect(cli.stdout.split('\n')).toContain('kubernetes:    v1.30.0+test-apiserver, 3 nodes');

    // Sorted by nodes either way, the one cluster with a count comes first (no count sorts last).
    const firstRow = () => page.locator('tbody tr').first().getAttribute('data-cluster');
    await page.locator('button[data-sort="nodes"]').click();
    await expect.poll(firstRow).toBe('kube-facts');
    await page.locator('button[data-sort="nodes"]').click();
    expect(
      await page.locator('th', { has: page.locator('[data-sort="nodes"]') }).getAttribute('aria-sort'),
    ).toBe('descending');
    await expect.poll(firstRow).toBe('kube-facts');
    // By name: one click ascending, the next reverses.
    await page.locator('button[data-sort="name"]').click();
    const ascendingFirst = await firstRow();
    await page.locator('button[data-sort="name"]').click();
    await expect.poll(firstRow).not.toBe(ascendingFirst);
    await page.locator('button[data-sort="name"]').click();
    await expect.poll(firstRow).toBe(ascendingFirst);

    // The claim filter: key=value.
    await page.getByLabel('Claims').fill('kubernetes.nodes=3');
    await expect
      .poll(() =>
        page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-cluster'))),
      )
      .toEqual(['kube-facts']);
    await page.getByLabel('Claims').fill('kubernetes.nodes=4');
    await page.getByText('No cluster matches the filters.').waitFor();
    await page.getByLabel('Claims').fill('');

    // Relayed is not in the direct path's colour (the Connected badge's green) nor the error red.
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 15_000 }).toBe('Connected');
    const colours = await inPage<{ relayed: string; direct: string; bad: string }>(
      page,
      `(() => {
         const probe = (cls) => {
           const el = document.createElement('span');
           el.className = cls;
           document.body.append(el);
           const c = getComputedStyle(el).color;
           el.remove();
           return c;
         };
         return {
           relayed: getComputedStyle(document.querySelector('tr[data-cluster="kube-facts"] .path')).color,
           direct: probe('path path-up path-direct'),
           bad: probe('state-disconnected'),
         };
       })()`,
    );
    expect(await row.locator('[data-path]').getAttribute('data-path')).toBe('relayed');
    expect(colours.relayed).not.toBe(colours.direct);
    expect(colours.relayed).not.toBe(colours.bad);

    // The cluster page names its two RTTs.
    await page.locator('a', { hasText: 'kube-facts' }).click();
    await page.locator('[data-field="rtt-relayed"]').waitFor();
    const labels = await page.locator('dl.facts dt').allTextContents();
    expect(labels).toEqual(expect.arrayContaining(['RTT of the direct path', 'RTT of the relayed path']));
    expect(await page.locator('[data-field="rtt-relayed"]').textContent()).toMatch(/^(-|\d+(\.\d\d)? ms)$/);
    await page.getByRole('link', { name: '← Clusters' }).click();

    // `tunnel-client status` prints its round trips rounded.
    const status = await run(CLIENT_BIN, ['status', '--state-dir', stateDir], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^rtt: +(-|\d+(\.\d\d)? ms)$/m);
    expect(status.stdout).toMatch(/^path rtt: +direct (-|\d+(\.\d\d)? ms), relayed (-|\d+(\.\d\d)? ms)$/m);
  }, 60_000);

  it('accepts and deletes selected clusters in bulk after a confirmation; Pending reads as waiting, not an error', async () => {
    const { page } = admin;
    const boot = await api(ready.url, 'POST', '/api/v1/tokens', {
      token: ready.adminKey!,
      body: { role: 'bootstrap' },
    });
    for (const name of ['bulk-a', 'bulk-b']) {
      const r = await api(ready.url, 'POST', '/api/v1/register', {
        token: boot.body.token,
        body: { cluster: name, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
      });
      expect(r.status, r.text).toBe(201);
    }
    await page.goto(`${ready.url}/ui/#/clusters`);
    const pending = page.locator('tr[data-cluster="bulk-a"] [data-field="state"] .badge');
    await expect.poll(() => pending.textContent()).toBe('Pending');
    const colour = (sel: string) =>
      inPage<string>(page, `getComputedStyle(document.querySelector('${sel}')).color`);
    const red = await inPage<string>(
      page,
      `(() => { const el = document.createElement('p'); el.className = 'error'; document.body.append(el);
         const c = getComputedStyle(el).color; el.remove(); return c; })()`,
    );
    expect(await colour('tr[data-cluster="bulk-a"] [data-field="state"] .badge')).not.toBe(red);
    expect(await pending.getAttribute('title')).toContain('waiting for an administrator');

    await page.getByLabel('Select bulk-a').check();
    await page.getByLabel('Select bulk-b').check();
    await page.getByRole('button', { name: 'Accept selected (2)' }).click();
    const dialog = page.getByRole('alertdialog');
    expect(await dialog.locator('[data-bulk-targets] li').allTextContents()).toEqual(['bulk-a', 'bulk-b']);
    // Cancel changes nothing.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('tr[data-cluster="bulk-a"]').getAttribute('data-status')).toBe('Pending');
    await page.getByRole('button', { name: 'Accept selected (2)' }).click();
    await page.getByRole('button', { name: 'Accept 2 clusters' }).click();
    for (const name of ['bulk-a', 'bulk-b'])
      await page.locator(`tr[data-cluster="${name}"][data-status="Accepted"]`).waitFor();
    expect(await page.getByLabel('Select bulk-a').isChecked()).toBe(false);

    await page.getByLabel('Select bulk-a').check();
    await page.getByLabel('Select bulk-b').check();
    await page.getByRole('button', { name: 'Delete selected (2)' }).click();
    expect(await page.getByRole('alertdialog').locator('h3').textContent()).toBe('Delete 2 clusters?');
    await page.getByRole('button', { name: 'Delete 2 clusters' }).click();
    for (const name of ['bulk-a', 'bulk-b'])
      await page.locator(`tr[data-cluster="${name}"]`).waitFor({ state: 'detached' });
    const gone = await api(ready.url, 'GET', '/api/v1/clusters/bulk-a', { token: ready.adminKey! });
    expect(gone.status).toBe(404);
  });

  it('shows values YAML errors inline and saves valid YAML into the merged view', async () => {
    const { page } = admin;
    await page.goto(`${ready.url}/ui/#/clusters/edge-lab-1`);
    // The connected agent's path history: its newest change is the path the page shows.
    const newest = page.locator('[data-path-history] tbody tr').first().locator('td[data-label="Path"]');
    await expect.poll(() => newest.textContent(), { timeout: 10_000 }).toMatch(/^(relayed|direct)$/);
    const editor = page.getByLabel(/Cluster layer/);
    await expect.poll(() => editor.inputValue()).toBe('{}\n');
    await editor.fill('image:\n  tag: [v2\n');
    await page.getByRole('button', { name: 'Save cluster values' }).click();
    await expect
      .poll(() => page.locator('[data-values="problems"]').textContent())
      .toMatch(/^line \d+, column \d+: /);
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    await editor.fill('- a list\n');
    await page.getByRole('button', { name: 'Save cluster values' }).click();
    await expect
      .poll(() => page.locator('[data-values="problems"]').textContent())
      .toContain('values must be a map');
    await editor.fill('image:\n  tag: v2\n');
    await page.getByRole('button', { name: 'Save cluster values' }).click();
    await expect.poll(() => page.locator('pre[data-values="merged"]').textContent()).toContain('tag: v2');
    expect(await page.locator('[data-values="problems"]').textContent()).toBe('');
    await expect
      .poll(() => page.locator('[data-impersonation]').textContent())
      .toMatch(/^the calling relay user \(impersonation: tunnel-relay:<key id>/);
    await shot(page, 'cluster');
  });

  it('a viewer key made on the access keys page sees no create or delete, a forged create is 403, revoking signs it out (polling)', async () => {
    const { page } = admin;
    await page.getByRole('link', { name: 'Access keys' }).click();
    await page.locator('#keys-title').waitFor();
    await shot(page, 'access-keys');
    await page.getByLabel('Role').selectOption('viewer');
    await page.getByLabel('Description').fill('console test viewer');
    await page.getByRole('button', { name: 'Create key' }).click();
    const token = ((await page.locator('pre[data-command="new-key"]').textContent()) ?? '').trim();
    expect(token).toMatch(/^trk_/);
    await page.locator('td', { hasText: 'console test viewer' }).waitFor();

    // This console meets a relay without the events feed (404): it polls instead, and still signs out on 401.
    const viewer = await openPage(390, 844);
    await viewer.context.route('**/api/v1/events?*', (route) =>
      route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"NOT_FOUND"}}' }),
    );
    await signIn(viewer.page, token);
    await expect.poll(() => viewer.page.locator('.feed').textContent()).toBe('polling');
    await viewer.page.locator('tr[data-cluster="edge-lab-1"]').waitFor();
    expect(await viewer.page.getByRole('button', { name: 'Connect cluster' }).count()).toBe(0);
    expect(await viewer.page.getByRole('link', { name: 'Access keys' }).count()).toBe(0);
    // Readable on a phone: nothing wider than the screen.
    expect(await inPage<number>(viewer.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      390,
    );
    await shot(viewer.page, 'clusters-phone');
    await viewer.page.locator('a', { hasText: 'edge-lab-1' }).click();
    await viewer.page.locator('#cluster-title').waitFor();
    for (const name of ['Delete…', 'Rotate PSK', 'Accept', 'Save cluster values']) {
      expect(await viewer.page.getByRole('button', { name }).count(), name).toBe(0);
    }
    const forged = await inPage(
      viewer.page,
      `(async () => {
         const res = await fetch('/api/v1/clusters', {
           method: 'POST',
           headers: { authorization: 'Bearer ' + Object.values(sessionStorage)[0], 'content-type': 'application/json' },
           body: JSON.stringify({ name: 'forged' }),
         });
         return { status: res.status, body: await res.json() };
       })()`,
    );
    expect(forged).toMatchObject({ status: 403, body: { error: { code: 'FORBIDDEN' } } });

    // The admin revokes the key on the access keys page; the viewer's open console signs itself out.
    const keyId = await page.locator('[data-created-key]').getAttribute('data-created-key');
    await page.locator(`tr[data-key="${keyId}"]`).getByRole('button', { name: 'Revoke…' }).click();
    await page.getByRole('button', { name: `Revoke ${keyId}` }).click();
    await page.locator(`tr[data-key="${keyId}"] td[data-label="State"]`, { hasText: 'revoked' }).waitFor();
    await viewer.page.getByLabel('Access key').waitFor({ timeout: 10_000 });
    expect(await inPage(viewer.page, 'sessionStorage.length')).toBe(0);
    await viewer.context.close();
  });

  it('shows the state badge Connected, then Disconnected within 3 s of kill -9 of the agent, without a reload', async () => {
    const { page } = admin;
    await page.goto(`${ready.url}/ui/#/clusters`);
    const row = page.locator('tr[data-cluster="edge-lab-1"]');
    await expect.poll(() => row.getAttribute('data-state'), { timeout: 15_000 }).toBe('Connected');
    expect(await row.locator('[data-field="state"]').textContent()).toBe('Connected');
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));
    const agent = agents[0]!;
    await agent.stop('SIGKILL');
    const killedAt = Date.now();
    await page
      .locator('tr[data-cluster="edge-lab-1"][data-state="Disconnected"]')
      .waitFor({ timeout: 10_000 });
    const ms = Date.now() - killedAt;
    console.log(`console: the row showed Disconnected ${ms} ms after kill -9 of the agent`);
    expect(ms).toBeLessThan(3_000);
    expect(navigations).toEqual([]);
    await page.goto(`${ready.url}/ui/#/clusters/edge-lab-1`);
    await expect
      .poll(() => page.locator('[data-cluster-page] [data-state]').textContent(), { timeout: 5_000 })
      .toBe('Disconnected');
  });

  it('rotates a PSK and deletes a cluster after confirmation; another open console drops the row live', async () => {
    const { page } = admin;
    const other = await openPage();
    await signIn(other.page, ready.adminKey!);
    const xssRow = 'tr[data-cluster="img-src-x-onerror-alert-1"]';
    await other.page.locator(xssRow).waitFor({ state: 'attached' });
    await page.goto(`${ready.url}/ui/#/clusters/img-src-x-onerror-alert-1`);
    await page.getByRole('button', { name: 'Rotate PSK' }).click();
    expect(await page.locator('pre[data-command="join"]').textContent()).toContain(
      '--cluster img-src-x-onerror-alert-1',
    );
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete img-src-x-onerror-alert-1' }).click();
    await page.locator('#clusters-title').waitFor();
    await other.page.locator(xssRow).waitFor({ state: 'detached', timeout: 5000 });
    expect(await other.page.locator('.feed').textContent()).toBe('live');
    await other.context.close();
  });

  it('lists the audit log newest first, filtered by action, and signs out', async () => {
    const { page } = admin;
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.locator('tr[data-audit-action]').first().waitFor();
    await page.getByLabel('Action').selectOption('cluster.create');
    const actions = await page
      .locator('tr[data-audit-action]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-audit-action')));
    expect(actions.length).toBeGreaterThanOrEqual(2);
    expect(new Set(actions)).toEqual(new Set(['cluster.create']));
    const targets = await page.locator('tr[data-audit-action] td[data-label="Target"]').allTextContents();
    expect(targets.slice(0, 4)).toEqual([
      'kube-facts',
      'bidi-name',
      'img-src-x-onerror-alert-1',
      'edge-lab-1',
    ]);
    await page.getByLabel('Action').selectOption('');
    // The cluster and session filters are the relay's: every row about edge-lab-1; no exec session was audited.
    await page.getByRole('textbox', { name: 'Cluster' }).fill('edge-lab-1');
    await expect
      .poll(
        async () =>
          new Set(await page.locator('tr[data-audit-action] td[data-label="Target"]').allTextContents()),
      )
      .toEqual(new Set(['edge-lab-1']));
    await page.getByLabel('Session').selectOption('exec');
    await expect.poll(() => page.locator('tr[data-audit-action]').count()).toBe(0);
    await page.getByLabel('Session').selectOption('');
    await page.getByRole('textbox', { name: 'Cluster' }).fill('');
    await shot(page, 'audit');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Access key').waitFor();
    expect(await inPage(page, 'sessionStorage.length')).toBe(0);
    expect(problems).toEqual([]);
  });
});
