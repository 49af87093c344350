/**
 * The monitoring files in deploy/ against the real promtool (Debian's prometheus package) and a live relay:
 * `promtool check rules` and `promtool test rules` on the alerting rules, `promtool check metrics` on the
 * `tunnel-relay serve` process's /metrics, and every metric the rules and the Grafana dashboard name is one
 * that relay exports (a renamed family would otherwise leave an alert that never fires).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedRelay, serve } from './abuse/relay-fixture.js';
import { buildIfStale, cleanup, tempDir } from './cli-harness.js';

const ROOT = join(import.meta.dirname, '..');
const RULES_DIR = join(ROOT, 'deploy', 'prometheus');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'tunnel-relay-dashboard.json');
/** Series the relay does not export itself: Prometheus's own, and families only some set-ups have. */
const NOT_FROM_ONE_RELAY = new Set([
  'up',
  // A relay serves it only with a mesh (replicas): its name is checked against docs/OPERATIONS.md instead.
  'tunnel_relay_mesh_forward_failures_total',
  'tunnel_relay_mesh_forwarded_total',
]);

/** prom-client's default gauges whose names end in `_total`, which `promtool check metrics` reports. */
const PROM_CLIENT_TOTAL_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

let relay: ServedRelay;
let exposition = '';

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', args, { cwd: RULES_DIR, input, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Metric names in PromQL text: identifiers followed by a selector, a range, or standing alone. */
function metricNames(exprs: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const e of exprs) {
    for (const m of e.matchAll(
      /\b(tunnel_relay_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+|up)\b(?!\s*\()/g,
    )) {
      names.add(m[1]!);
    }
  }
  return names;
}

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('prometheus-rules-'));
  const res = await request(`${relay.ready.url}/metrics`, {
    dispatcher: new Agent({ connect: { rejectUnauthorized: false } }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  expect(res.statusCode).toBe(200);
  exposition = await res.body.text();
}, 120_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

describe('monitoring files', () => {
  it('the alerting rules pass promtool check rules and their unit tests', () => {
    const check = promtool(['check', 'rules', 'tunnel-relay-alerts.yaml']);
    expect(check.status, check.output).toBe(0);
    const test = promtool(['test', 'rules', 'tunnel-relay-alerts.test.yaml']);
    expect(test.status, test.output).toBe(0);
    expect(test.output).toContain('SUCCESS');
  });

  it("a live relay's /metrics passes promtool check metrics", () => {
    expect(exposition).toContain('# TYPE tunnel_relay_build_info gauge');
    const check = promtool(['check', 'metrics'], exposition);
    // prom-client's default collectors export three gauges named `_total` (its choice, kept as its users know
    // them); every other family, the relay's own all included, must lint clean.
    const problems = check.output
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter((line) => !PROM_CLIENT_TOTAL_GAUGES.some((name) => line.startsWith(`${name} `)));
    expect(problems).toEqual([]);
  });

  it('every metric the rules and the dashboard name is exported or documented', () => {
    const exported = new Set(
      [...exposition.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) /gm)].map((m) => m[1]!),
    );
    const rules = readFileSync(join(RULES_DIR, 'tunnel-relay-alerts.yaml'), 'utf8');
    const ruleExprs = [...rules.matchAll(/expr: (>\n(?:\s{10}.*\n)+|.*)/g)].map((m) => m[1]!);
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const panelExprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(ruleExprs.length).toBeGreaterThanOrEqual(9);
    expect(panelExprs.length).toBeGreaterThanOrEqual(15);
    const operations = readFileSync(join(ROOT, 'docs', 'OPERATIONS.md'), 'utf8');
    const missing = [...metricNames([...ruleExprs, ...panelExprs])].filter(
      (name) =>
        !exported.has(name) &&
        !(NOT_FROM_ONE_RELAY.has(name) && (name === 'up' || operations.includes(`\`${name}\``))),
    );
    expect(missing).toEqual([]);
  });
});
