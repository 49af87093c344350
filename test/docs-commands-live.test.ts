/**
 * Every command the docs show runs against a live relay as documented. One set-up, made of the docs' own commands in
 * a temporary HOME with the linked names on PATH: `tunnel-relay serve --data-dir ./relay-data` (the listen address
 * and ports from the environment), the export line it prints, `cluster create edge-1`, and the agent joined with the
 * printed join command (upstream: a test Kubernetes API server, the agent set up as in a pod) and running. Then each
 * documented command (test/helpers/docs-commands.ts: fenced lines and inline commands of README.md and docs/*.md;
 * synopses, elided `...` lines and flag names are forms, not commands) runs in a shell with the docs' placeholders
 * replaced by the set-up's values (SUBSTITUTIONS); it must exit 0, or non-zero when the docs show an `error` under
 * it, and its output must have the shape the docs show (test/helpers/docs-output-shape.ts). Commands the set-up
 * cannot serve are in NOT_RUN with the reason; the test fails when that list names a command the docs no longer show,
 * and when a documented command is neither run nor listed. The curl examples through the CONNECT entry run too, to a
 * plain HTTP server the agent allows (`--allow`), and the `| sh` install flow's retry after a failed apply.
 */
import { once } from 'node:events';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRelayProgram } from '../relay/cli/program.js';
import { generateKeyPair, keyToBase64 } from '../shared/keys.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { buildClientProgram } from '../tunnel-client/cli/program.js';
import { buildIfStale, CLIENT_BIN, cleanEnv, cleanup, RELAY_BIN, ROOT, tempDir } from './cli-harness.js';
import {
  DOC_FILES,
  type DocCommand,
  documentedCommands,
  documentedConnectCurls,
  namesAFlag,
  namesOnlyACommand,
  shellWords,
} from './helpers/docs-commands.js';
import { missingShapes } from './helpers/docs-output-shape.js';
import { requestFrom } from './helpers/from-source.js';
import { type KubeApiServer, startKubeApiServer } from './helpers/kube-api/server.js';
import { makeCaSignedCert } from './helpers/test-cert.js';
import { startTinyproxy, type Tinyproxy } from './helpers/tinyproxy.js';
import { type ShellRun, UserShell } from './helpers/user-shell.js';
import { pollUntil } from './helpers/wait.js';

/** Documented commands this set-up does not run, each with why (keyed by the command as the docs write it). */
const NOT_RUN: Record<string, string> = {
  "tunnel-relay serve --store 'postgres://relay@db.internal:5432/relay?sslmode=verify-full' --store-password-file /etc/tunnel-relay/pg-password --store-ca-file /etc/tunnel-relay/pg-ca.pem":
    'needs a PostgreSQL server (test/postgres-replicas.test.ts runs serve on one)',
  "tunnel-relay serve --listen 0.0.0.0:8443 --public-url https://relay.example.com --store 'postgres://relay@db.internal:5432/relay?sslmode=verify-full' --store-password-file pg-password --tls-cert relay.pem --tls-key relay-key.pem --hub-key-file hub.key --mesh-key-file mesh.key --mesh-url https://10.0.0.11:8443 --udp-port 51820 --udp-public-endpoint 203.0.113.11:51820":
    'a fleet replica: needs PostgreSQL and the fleet addresses (test/mesh-replicas.test.ts)',
  "tunnel-relay serve --mode relay --listen 0.0.0.0:8443 --public-url https://relay.example.com --store 'postgres://relay@db.internal:5432/relay?sslmode=verify-full' --store-password-file pg-password --tls-cert relay.pem --tls-key relay-key.pem --mesh-key-file mesh.key --mesh-url https://10.0.1.11:8443":
    'a relay-tier replica: needs PostgreSQL and hub replicas (test/relay-mode.test.ts)',
  'tunnel-relay manifests relay --public-url https://relay.example.com --image registry.example/wg-relay-tunnel:0.1.0 | kubectl apply -f -':
    'applies to a Kubernetes cluster (the manifests are checked against the schemas in test/manifests-cli.test.ts)',
  'tunnel-relay manifests relay --public-url https://relay.example.com --store postgres --replicas 3 --tls-secret tunnel-relay-tls | kubectl apply -f -':
    'applies to a Kubernetes cluster (test/manifests-cli.test.ts)',
  'tunnel-relay cluster create local-cluster --print-install-command | sh':
    'its install command applies to the hub cluster; the test below runs it with a kubectl that points nowhere, and its retry',
  'tunnel-relay serve --plain-http':
    'serves behind a TLS-terminating balancer, which this set-up has not (test/serve-plain-http.test.ts)',
  'tunnel-relay serve --stun-port N':
    'names the flag; a relay with a STUN port is test/stun-responder.test.ts',
  'tunnel-relay cluster agents remove NAME KEY':
    "removes an agent of a set after scaling down; the set-up's one agent serves the other commands (test/cluster-agents-remove.test.ts runs it)",
  'tunnel-relay cluster create edge-1':
    "the set-up's edge-1 comes from CLI.md's `cluster create edge-1 --ca-pin ...`; a second create of the name is a conflict",
};

const RUN_BY_SETUP = new Set([
  'tunnel-relay serve --data-dir ./relay-data',
  'tunnel-relay cluster create edge-1 --ca-pin sha256:f858...fc6e',
]);

/** Commands that run until stopped: each must print what the pattern says, then is stopped. */
const RUNS_UNTIL_STOPPED: Record<string, RegExp> = {
  'tunnel-relay cluster list --watch': /^NAME\s+DISPLAY NAME/m,
  'npm start': /relay listening on https:\/\/127\.0\.0\.1:\d+/,
  'npm start -- --listen 0.0.0.0:8443': /relay listening on https:\/\/127\.0\.0\.1:\d+/,
};

/** Run after every other command, in this order (each ends something the others use). */
const LAST = ['tunnel-client unjoin --force'];

interface SetUp {
  url: string;
  pin: string;
  caPem: string;
  adminKey: string;
  dataDir: string;
  adminKeyId: string;
}

let setUp: SetUp;

/** The docs' example values (in commands and in the output they show) and what this set-up has in their place. */
function exampleValues(): Array<[RegExp, string]> {
  return [
    [/sha256:f858\.\.\.fc6e/g, setUp.pin],
    [/https:\/\/127\.0\.0\.1:(?:8443|37227)/g, setUp.url],
    [/0\.0\.0\.0:8443/g, '127.0.0.1:0'],
    [/\/var\/lib\/tunnel-relay/g, setUp.dataDir],
    [/192\.0\.2\.7/g, '127.0.0.7'],
    [/http:\/\/proxy\.corp:3128/g, proxy.url()],
  ];
}

/** The docs' placeholders in a command and this set-up's values for them. */
async function placeholders(c: DocCommand): Promise<Array<[RegExp, string]>> {
  const pairs: Array<[RegExp, string]> = [
    [/\bk_\.\.\.|\bKEY\b/g, setUp.adminKeyId],
    // A new cluster for a create, the set-up's cluster otherwise.
    [/\bNAME\b/g, /cluster create NAME/.test(c.line) ? 'edge-set' : 'edge-1'],
    [/\bDIR\b/g, setUp.dataDir],
    [/\bN\b/g, '2'],
  ];
  if (/\bID\b/.test(c.line)) pairs.push([/\bID\b/g, await newTokenId()]);
  return pairs;
}

function substitute(text: string, pairs: Array<[RegExp, string]>): string {
  return pairs.reduce((t, [re, value]) => t.replace(re, value), text);
}

const relayProgram = buildRelayProgram();
const clientProgram = buildClientProgram();

/** A synopsis, an elided line or a flag's name: not a command to run. */
function isForm(c: DocCommand): boolean {
  if (RUN_BY_SETUP.has(c.line)) return false;
  const words = shellWords(c.line);
  // `[optional]`, `...` for more, and alternatives written `bash|zsh` or `join/run`.
  const formWord = (w: string) =>
    w.includes('[') || w.includes('...') || /\w\|\w/.test(w) || /^[a-z-]+\/[a-z-]+$/.test(w);
  if (words.some(formWord)) return true;
  if (!c.inline || words[0] === 'npm') return false;
  const program = words[0] === 'tunnel-relay' ? relayProgram : clientProgram;
  return namesAFlag(program, words);
}

function pathOnly(words: string[]): boolean {
  if (words[0] === 'npm') return words.length <= 2;
  return namesOnlyACommand(words[0] === 'tunnel-relay' ? relayProgram : clientProgram, words);
}

const documented = DOC_FILES(ROOT).flatMap((f) => documentedCommands(ROOT, f, pathOnly));
const commands = documented.filter((c) => !isForm(c));
const toRun = commands.filter((c) => NOT_RUN[c.line] === undefined && !RUN_BY_SETUP.has(c.line));

let shell: UserShell;
let api: KubeApiServer;
let relay: ShellRun;
let agent: ShellRun;
/** A plain HTTP server on the agent's side, allowed with --allow, for the CONNECT examples. */
let web: Server;
/** The HTTP CONNECT proxy of the docs' proxy examples (tinyproxy, CONNECT to the relay's port only). */
let proxy: Tinyproxy;
let webPort: number;
const WEB_ANSWER = 'hello from the agent side';
/** What the set-up's own documented commands printed, by command line. */
const setUpOutput = new Map<string, { code: number | null; out: string }>();

/** A new viewer key's id (for `token revoke ID`), made through the API. */
async function newTokenId(): Promise<string> {
  const r = await requestFrom({
    url: setUp.url,
    caPem: setUp.caPem,
    localAddress: '127.0.0.1',
    method: 'POST',
    path: '/api/v1/tokens',
    token: setUp.adminKey,
    body: { role: 'viewer', description: 'for token revoke ID' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id;
}

function link(bin: string, name: string, target: string): void {
  const file = join(bin, name);
  writeFileSync(file, `#!/bin/sh\nexec '${process.execPath}' ${NODE_FLAGS.join(' ')} '${target}' "$@"\n`);
  chmodSync(file, 0o755);
}

const SERVE = 'tunnel-relay serve --data-dir ./relay-data';
const CREATE = 'tunnel-relay cluster create edge-1 --ca-pin sha256:f858...fc6e';

async function startKubeApi(root: string): Promise<string> {
  const cert = makeCaSignedCert('DNS:kubernetes.default.svc,DNS:localhost,IP:127.0.0.1');
  api = await startKubeApiServer({
    cert: cert.cert,
    key: cert.key,
    authz: {
      tokens: new Set(['sa-token-1']),
      serviceAccount: 'system:serviceaccount:tunnel-system:tunnel-client',
      impersonableGroups: new Set(['tunnel-relay:admin', 'tunnel-relay:viewer']),
      bindings: new Map([
        ['tunnel-relay:admin', 'cluster-admin'],
        ['tunnel-relay:viewer', 'view'],
      ]),
      serviceAccountRights: new Set(['list nodes']),
    },
  });
  const saDir = join(root, 'serviceaccount');
  mkdirSync(saDir);
  writeFileSync(join(saDir, 'ca.crt'), cert.caCert);
  writeFileSync(join(saDir, 'token'), 'sa-token-1\n');
  return saDir;
}

/** The user's shell: the linked names on PATH, a HOME of its own, the agent's environment as in a pod. */
function userShell(root: string, saDir: string): UserShell {
  const bin = join(root, 'bin');
  const home = join(root, 'home');
  mkdirSync(bin);
  mkdirSync(home);
  link(bin, 'tunnel-relay', RELAY_BIN);
  link(bin, 'tunnel-client', CLIENT_BIN);
  const env = cleanEnv({
    HOME: home,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    // The relay's address and ports come from the environment, so serve runs as the docs write it.
    TUNNEL_RELAY_LISTEN: '127.0.0.1:0',
    TUNNEL_RELAY_UDP_PORT: 'off',
    TUNNEL_RELAY_STUN_PORT: 'off',
    KUBERNETES_SERVICE_HOST: '127.0.0.1',
    KUBERNETES_SERVICE_PORT: String(api.port),
    TUNNEL_CLIENT_SERVICE_ACCOUNT_DIR: saDir,
  });
  return new UserShell({ env, cwd: root });
}

function match(out: string, re: RegExp, what: string): string {
  const m = re.exec(out)?.[1];
  if (m === undefined) throw new Error(`no ${what} in:\n${out}`);
  return m;
}

async function startRelay(root: string): Promise<void> {
  relay = shell.start(SERVE);
  await shell.waitOutput(relay, /tunnel-relay cluster create edge-1\n/, 30_000, "serve's next lines");
  setUpOutput.set(SERVE, { code: null, out: relay.out });
  shell.exports.push(match(relay.out, /^\s+(export .*)$/m, 'export line'));
  const url = match(relay.out, /relay listening on (\S+)/, 'URL');
  const pin = match(relay.out, /CA pin: (sha256:\S+)/, 'pin');
  const tokens = await shell.run('tunnel-relay token list -o json');
  expect(tokens.code, tokens.out).toBe(0);
  const admin = JSON.parse(tokens.out).items.find((t: { role: string }) => t.role === 'admin');
  const dataDir = join(root, 'relay-data');
  const caPem = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
  const adminKey = match(relay.out, /admin access key .*: (trk_\S+)/, 'admin key');
  setUp = { url, pin, caPem, adminKey, dataDir, adminKeyId: admin.id };
}

async function startAgent(): Promise<void> {
  const created = await shell.run(CREATE.replace('sha256:f858...fc6e', setUp.pin));
  setUpOutput.set(CREATE, created);
  expect(created.code, created.out).toBe(0);
  const joinLine = match(created.out, /^\s+(TUNNEL_CLIENT_PSK=\S+ tunnel-client join .*)$/m, 'join command');
  const upstream = `--upstream https://kubernetes.default.svc --allow 127.0.0.1:${webPort}`;
  const joined = await shell.run(`${joinLine} ${upstream} --wait`, {
    ms: 60_000,
  });
  expect(joined.code, joined.out).toBe(0);
  agent = shell.start('tunnel-client run');
  await pollUntil({
    what: 'edge-1 connected',
    read: async () => {
      const r = await shell.run('tunnel-relay cluster get edge-1 -o json');
      return JSON.parse(r.out).connected === true;
    },
    until: (up) => up,
    timeoutMs: 30_000,
    intervalMs: 300,
  });
}

/** Ten failed registrations from 127.0.0.7, so `rate-limit list` has a limited source to show and clear. */
async function failRegistrations(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const r = await requestFrom({
      url: setUp.url,
      caPem: setUp.caPem,
      localAddress: '127.0.0.7',
      method: 'POST',
      path: '/api/v1/register',
      token: `tpsk_${'Q'.repeat(43)}`,
      body: { cluster: 'nobody', publicKey: keyToBase64(generateKeyPair().publicKey), agentVersion: '0.1.0' },
    });
    expect(r.status).toBe(401);
  }
}

beforeAll(async () => {
  buildIfStale();
  const root = tempDir('docs-commands-');
  const saDir = await startKubeApi(root);
  web = createServer((_req, res) => res.end(WEB_ANSWER));
  web.listen(0, '127.0.0.1');
  await once(web, 'listening');
  webPort = (web.address() as AddressInfo).port;
  shell = userShell(root, saDir);
  await startRelay(root);
  proxy = await startTinyproxy({ connectPorts: [Number(new URL(setUp.url).port)] });
  await startAgent();
  await failRegistrations();
}, 180_000);

afterAll(async () => {
  if (agent) await shell.stop(agent);
  if (relay) await shell.stop(relay);
  shell?.stopAll();
  await proxy?.stop();
  await api?.close();
  web?.close();
  await cleanup();
});

/** Runs a documented command line once (`group`: every place the docs show it); returns what is wrong, or null. */
async function runDocumented(group: DocCommand[]): Promise<string | null> {
  const c = group[0]!;
  const where = group.map((g) => g.where).join(', ');
  const values = exampleValues();
  const line = substitute(substitute(c.line, values), await placeholders(c));
  const zsh = /completion zsh/.test(line);
  const opts = {
    shell: zsh ? ('zsh' as const) : ('bash' as const),
    cwd: line.startsWith('npm ') ? ROOT : undefined,
  };
  const script = zsh ? `autoload -Uz compinit && compinit -u && ${line}` : line;
  const until = RUNS_UNTIL_STOPPED[c.line];
  if (until) {
    const r = shell.start(script, opts);
    try {
      await shell.waitOutput(r, until, 30_000, line);
      return null;
    } catch (err) {
      return `${where}: ${line}\n  ${(err as Error).message}`;
    } finally {
      await shell.stop(r);
    }
  }
  const r = await shell.run(script, { ...opts, ms: 30_000 });
  const expectError = group.some((g) => g.output.find((l) => l.trim() !== '')?.startsWith('error '));
  const exitOk = expectError ? r.code !== 0 : r.code === 0;
  const missing = group.flatMap((g) =>
    missingShapes(
      g.output.map((l) => substitute(l, values)),
      r.out,
    ),
  );
  if (exitOk && missing.length === 0) return null;
  const want = expectError ? 'an error (the docs show one)' : 'exit 0';
  const shown = JSON.stringify(missing);
  return `${where}: ${line}\n  exit ${r.code}, want ${want}; documented lines not shown: ${shown}\n  output: ${r.out.slice(0, 800)}`;
}

/** The commands to run, one group per distinct line, in the docs' order with LAST at the end. */
function runOrder(): DocCommand[][] {
  const groups = new Map<string, DocCommand[]>();
  for (const c of toRun) groups.set(c.line, [...(groups.get(c.line) ?? []), c]);
  const all = [...groups.values()];
  return [
    ...all.filter((g) => !LAST.includes(g[0]!.line)),
    ...LAST.flatMap((l) => all.filter((g) => g[0]!.line === l)),
  ];
}

describe('every documented command, run against a live relay', () => {
  it('the docs show commands, and the lists name only commands they show', () => {
    expect(commands.length).toBeGreaterThan(30);
    const lines = new Set(commands.map((c) => c.line));
    const listed = [...Object.keys(NOT_RUN), ...RUN_BY_SETUP, ...Object.keys(RUNS_UNTIL_STOPPED), ...LAST];
    expect(listed.filter((l) => !lines.has(l))).toEqual([]);
  });

  it('the shape check can fail: another column, another error code, another word', () => {
    expect(missingShapes(['NAME  STATUS  AGE', 'edge-1  Accepted  3m'], 'NAME  STATE  AGE\n')).toEqual([
      'NAME  STATUS  AGE',
    ]);
    expect(
      missingShapes(['error BAD_INPUT: cluster "x" is bad'], 'error NOT_FOUND: cluster "x" is bad'),
    ).toHaveLength(1);
    expect(missingShapes(['deleted cluster edge-1'], 'removed cluster edge-2\n')).toHaveLength(1);
    expect(missingShapes(['deleted cluster edge-1'], 'deleted cluster edge-2\n')).toEqual([]);
  });

  it("the set-up's commands (serve, cluster create) print what the docs show", () => {
    const failures = commands
      .filter((c) => RUN_BY_SETUP.has(c.line))
      .flatMap((c) => {
        const got = setUpOutput.get(c.line);
        const doc = c.output.map((l) => l.replace('sha256:f858...fc6e', setUp.pin));
        const missing = got ? missingShapes(doc, got.out) : ['not run'];
        return missing.length === 0 ? [] : [`${c.where}: ${c.line}: ${JSON.stringify(missing)}\n${got?.out}`];
      });
    expect(failures).toEqual([]);
  });

  it('the JSON the docs show for `tunnel-client status` has the keys the running agent prints', async () => {
    const cli = readFileSync(join(ROOT, 'docs/CLI.md'), 'utf8');
    const section = cli.slice(cli.indexOf('\n### status\n'));
    const block = /```json\n([\s\S]*?)\n```/.exec(section)?.[1];
    expect(block, 'a ```json block under "### status"').toBeDefined();
    const r = await shell.run('tunnel-client status --output json');
    expect(r.code, r.out).toBe(0);
    const printed = JSON.parse(r.out);
    expect(printed.connected).toBe(true);
    expect(Object.keys(JSON.parse(block ?? '{}')).sort()).toEqual(Object.keys(printed).sort());
  });

  it("the hub's `cluster create local-cluster --print-install-command | sh` after a failed apply: the retry says what to run, and that works", async () => {
    // kubectl points at no cluster: the apply fails after curl spent the one-time link.
    const toNowhere = '| KUBECONFIG=/nonexistent/kubeconfig sh';
    const documented = 'tunnel-relay cluster create local-cluster --print-install-command | sh';
    const first = await shell.run(documented.replace('| sh', toNowhere), { ms: 60_000 });
    expect(first.out).toMatch(/^error: .*(?:connection refused|openapi)/m);
    const again = await shell.run(documented.replace('| sh', toNowhere), { ms: 60_000 });
    const hint = 'tunnel-relay cluster rotate-psk local-cluster --print-install-command | sh';
    expect(again.out.trim()).toBe(
      `error CONFLICT: cluster "local-cluster" already exists; for a new install command (the old link and PSK stop working) run '${hint}'`,
    );
    // The hint as printed, with kubectl reading the manifests locally (no Kubernetes API server here).
    const local = "sed 's/kubectl apply -f -$/kubectl label --local -f - -o name tunnel-test=seen/' | sh";
    const fixed = await shell.run(hint.replace('| sh', `| ${local}`), { ms: 60_000 });
    expect(fixed.code, fixed.out).toBe(0);
    expect(fixed.out).toContain('secret/tunnel-client-join');
  }, 120_000);

  it('the curl examples through the CONNECT entry run as written', async () => {
    const curls = DOC_FILES(ROOT).flatMap((f) => documentedConnectCurls(ROOT, f));
    expect(curls.length).toBeGreaterThan(0);
    const failures: string[] = [];
    for (const c of curls) {
      const line = substitute(c.line, [
        [/https:\/\/relay:8443/g, setUp.url],
        [/<key>/g, setUp.adminKey],
        [/<name>/g, 'edge-1'],
        [/<port>/g, String(webPort)],
      ]);
      const r = await shell.run(line);
      if (r.code !== 0 || !r.out.includes(WEB_ANSWER))
        failures.push(`${c.where}: ${line}\n  exit ${r.code}: ${r.out}`);
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('each other documented command exits as the docs say and prints the shape they show', async () => {
    const failures: string[] = [];
    for (const group of runOrder()) {
      if (LAST.includes(group[0]!.line) && agent) await shell.stop(agent);
      const why = await runDocumented(group);
      if (why) failures.push(why);
    }
    expect(failures).toEqual([]);
  }, 300_000);
});
