/**
 * The web console's paged clusters view in a real browser (Debian's chromium through playwright-core) against a
 * real `tunnel-relay serve` holding more clusters than one page: the view shows the first page of 100 (the events
 * feed sends no snapshot), "Load more clusters" reads the rest, changes inside the pages read show live while a
 * cluster created beyond them waits for its page, deletions drop rows, and a link to a cluster beyond the pages
 * read opens its page.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { api } from './abuse/relay-fixture.js';
import { cleanup, type Proc, type ReadyLine, startServe, tempDir } from './cli-harness.js';
import { buildConsoleIfStale, launchChromium } from './console-harness.js';

/** The console's page of clusters (console/src/lib/use-clusters.ts). */
const PAGE = 100;
const CLUSTERS = 130;
const names = Array.from({ length: CLUSTERS }, (_, i) => `page-${String(i).padStart(3, '0')}`);

let relay: Proc;
let ready: ReadyLine;
let browser: Browser;
const admin = () => ready.adminKey!;

beforeAll(async () => {
  buildConsoleIfStale();
  ({ proc: relay, ready } = await startServe(tempDir('console-paging-'), '127.0.0.1:0'));
  browser = await launchChromium();
  const key = await api(ready.url, 'POST', '/api/v1/tokens', { token: admin(), body: { role: 'bootstrap' } });
  for (const cluster of names) {
    const body = { cluster, publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' };
    const r = await api(ready.url, 'POST', '/api/v1/register', { token: key.body.token, body });
    expect(r.status, r.text).toBe(201);
  }
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await relay?.stop();
  await cleanup();
});

/** A signed-in admin console at `hash`, and the URLs of the events feed it opens. */
async function signedIn(hash = ''): Promise<{ page: Page; feedUrls: string[] }> {
  const context = await browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 860 },
  });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const feedUrls: string[] = [];
  page.on('request', (r) => {
    if (r.url().includes('/api/v1/events')) feedUrls.push(r.url());
  });
  await page.goto(`${ready.url}/ui/${hash}`);
  await page.getByLabel('Access key').fill(admin());
  await page.getByRole('button', { name: 'Sign in' }).click();
  return { page, feedUrls };
}

const rows = (page: Page) => page.locator('tr[data-cluster]');
const call = (method: 'POST' | 'DELETE', path: string, body?: unknown) =>
  api(ready.url, method, path, { token: admin(), ...(body === undefined ? {} : { body }) });

describe('the clusters view with more clusters than a page', () => {
  it('shows a page, loads the next on request, and keeps what it shows live', async () => {
    const { page, feedUrls } = await signedIn();
    await page.locator('#clusters-title').waitFor();
    await expect.poll(() => page.locator('.feed').textContent()).toBe('live');
    await expect.poll(() => rows(page).count()).toBe(PAGE);
    expect(await rows(page).first().getAttribute('data-cluster')).toBe(names[0]);
    await page.getByText(`${PAGE} clusters loaded; more on the relay.`).waitFor();

    // A change inside the pages read shows at once; a cluster created beyond them waits for its page.
    expect((await call('POST', '/api/v1/clusters', { name: 'zz-late' })).status).toBe(201);
    expect((await call('POST', `/api/v1/clusters/${names[5]}/deny`)).status).toBe(200);
    await page.locator(`tr[data-cluster="${names[5]}"][data-status="Denied"]`).waitFor();
    expect(await page.locator('tr[data-cluster="zz-late"]').count()).toBe(0);
    expect(await rows(page).count()).toBe(PAGE);

    await page.getByRole('button', { name: 'Load more clusters' }).click();
    await expect.poll(() => rows(page).count()).toBe(CLUSTERS + 1);
    await page.getByText(`All ${CLUSTERS + 1} clusters loaded.`).waitFor();
    expect(await page.getByRole('button', { name: 'Load more clusters' }).count()).toBe(0);
    const shown = await rows(page).evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-cluster')));
    expect(shown).toEqual([...names, 'zz-late']);

    // Every page is read now: a new cluster anywhere shows, a deleted one goes.
    expect((await call('POST', '/api/v1/clusters', { name: 'aa-early' })).status).toBe(201);
    expect((await call('DELETE', `/api/v1/clusters/${names[10]}`)).status).toBe(200);
    await page.locator('tr[data-cluster="aa-early"]').waitFor();
    await page.locator(`tr[data-cluster="${names[10]}"]`).waitFor({ state: 'detached' });
    // The feed was opened without its snapshot of every cluster.
    expect(feedUrls.length).toBeGreaterThan(0);
    expect(feedUrls.every((u) => u.endsWith('/api/v1/events?snapshot=false'))).toBe(true);
    await page.context().close();
  });

  it('opens a cluster beyond the pages read from a link, and keeps it current', async () => {
    const target = names[CLUSTERS - 1]!;
    const { page } = await signedIn(`#/clusters/${target}`);
    await page.locator(`[data-cluster-page="${target}"]`).waitFor();
    expect((await call('POST', `/api/v1/clusters/${target}/deny`)).status).toBe(200);
    await page.locator(`[data-cluster-page="${target}"] .badge`, { hasText: 'Denied' }).waitFor();
    await page.goto(`${ready.url}/ui/#/clusters/no-such-cluster`);
    await page.getByText('No cluster named no-such-cluster.').waitFor();
    await page.context().close();
  });
});
