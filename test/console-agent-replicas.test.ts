/**
 * Agent replicas in the web console, in a real browser (chromium through playwright-core) against a real
 * `tunnel-relay serve`: the connect drawer creates a cluster with 2 agent replicas, two real tunnel-client
 * processes join with the PSK its join command shows, the cluster page lists both agents; stopping one shows the
 * cluster Degraded on the clusters list (live, no reload) and that agent Disconnected on its page; starting it
 * again shows Connected; a stopped agent removed from its row (Remove, then confirm) leaves one agent, Connected.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  Proc,
  type ReadyLine,
  startServe,
  tempDir,
} from './cli-harness.js';
import { buildConsoleIfStale, launchChromium } from './console-harness.js';
import { joinAgent } from './helpers/joined-agent.js';

const SESSION_UP = 'WireGuard session to the hub is up';
const NAME = 'edge-pair';

let relay: Proc;
let ready: ReadyLine;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const problems: string[] = [];
const stateDirs: string[] = [];
const agents: Proc[] = [];

beforeAll(async () => {
  buildIfStale();
  buildConsoleIfStale();
  ({ proc: relay, ready } = await startServe(tempDir('console-replicas-'), '127.0.0.1:0'));
  browser = await launchChromium();
  context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 860 } });
  context.setDefaultTimeout(15_000);
  page = await context.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop('SIGKILL');
  await browser?.close();
  await relay?.stop();
  await cleanup();
});

async function startAgent(i: number): Promise<Proc> {
  const p = new Proc(CLIENT_BIN, ['run', '--state-dir', stateDirs[i]!], cleanEnv());
  await p.waitFor((q) => q.stderr.includes(SESSION_UP), 20_000, `agent ${i} session up`);
  return p;
}

const row = () => page.locator(`tr[data-cluster="${NAME}"]`);

describe('agent replicas in the console', () => {
  it('creates a cluster of 2 agent replicas from the connect drawer; both agents join', async () => {
    await page.goto(`${ready.url}/`);
    await page.getByLabel('Access key').fill(ready.adminKey ?? '');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#clusters-title').waitFor();
    await page.getByRole('button', { name: 'Connect cluster' }).click();
    await page.getByLabel('Display Name').fill('Edge set');
    await page.getByLabel('Kubernetes Name (ID)').fill(NAME);
    await page.getByLabel('Agent replicas').fill('11');
    expect(await page.locator('#agent-replicas-help').textContent()).toContain('1 to 10');
    expect(await page.getByRole('button', { name: 'Create cluster' }).isDisabled()).toBe(true);
    await page.getByLabel('Agent replicas').fill('2');
    await page.getByRole('button', { name: 'Create cluster' }).click();
    const joinText = (await page.locator('pre[data-command="join"]').textContent()) ?? '';
    const psk = /TUNNEL_CLIENT_PSK=(\S+)/.exec(joinText)?.[1] ?? '';
    expect(psk).toMatch(/^tpsk_/);
    await page.getByRole('button', { name: 'Close' }).click();
    for (let i = 0; i < 2; i++) {
      const o = {
        relayUrl: ready.url,
        cluster: NAME,
        psk,
        caPin: ready.caPin,
        upstream: 'http://127.0.0.1:9',
      };
      stateDirs.push(await joinAgent({ ...o, prefix: `console-replica-${i}` }));
      agents.push(await startAgent(i));
    }
    await page.locator(`tr[data-cluster="${NAME}"][data-state="Connected"]`).waitFor({ state: 'attached' });
  }, 120_000);

  it('lists both agents on the cluster page; one stopped shows Degraded, then Connected once it is back', async () => {
    const states: string[] = [];
    await page.exposeFunction('noteState', (s: string) => states.push(s));
    await page.evaluate(`(() => {
      let shown = '';
      new MutationObserver(() => {
        const now = document.querySelector('tr[data-cluster="${NAME}"]')?.dataset.state ?? '';
        if (now !== shown) { shown = now; window.noteState(now); }
      }).observe(document.body, { subtree: true, childList: true, attributes: true });
    })()`);
    await agents[1]!.stop('SIGTERM');
    await page.locator(`tr[data-cluster="${NAME}"][data-state="Degraded"]`).waitFor({ state: 'attached' });
    expect(await row().getAttribute('data-connected')).toBe('true');
    agents[1] = await startAgent(1);
    await page.locator(`tr[data-cluster="${NAME}"][data-state="Connected"]`).waitFor({ state: 'attached' });
    expect(states.slice(-2)).toEqual(['Degraded', 'Connected']);
    await page.goto(`${ready.url}/ui/#/clusters/${NAME}`);
    await page.locator('#cluster-title').waitFor();
    await expect
      .poll(() => page.locator('table[data-agents] tbody tr[data-state="Connected"]').count())
      .toBe(2);
    expect(await page.locator('[data-agents-summary]').textContent()).toContain('2 of 2 agents connected');
    await agents[0]!.stop('SIGTERM');
    await expect
      .poll(() => page.locator('table[data-agents] tbody tr[data-state="Disconnected"]').count(), {
        timeout: 15_000,
      })
      .toBe(1);
    expect(problems).toEqual([]);
  }, 120_000);

  it('removes the stopped agent from its row (after a confirmation): one agent left, Connected', async () => {
    const gone = page.locator('table[data-agents] tbody tr[data-state="Disconnected"]');
    // A connected agent offers no removal.
    expect(await page.locator('tr[data-state="Connected"] [data-action="remove-agent"]').count()).toBe(0);
    await gone.locator('[data-action="remove-agent"]').click();
    await gone.locator('[data-action="confirm-remove-agent"]').click();
    await expect.poll(() => page.locator('table[data-agents] tbody tr').count(), { timeout: 15_000 }).toBe(1);
    await expect
      .poll(() => page.locator('[data-agents-summary]').textContent(), { timeout: 15_000 })
      .toContain('1 of 1 agents connected');
    expect(problems).toEqual([]);
  }, 60_000);
});
