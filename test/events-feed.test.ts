/**
 * GET /api/v1/events through the real `tunnel-relay serve` and `tunnel-client` binaries, read with `curl -N`:
 * the snapshot, then a create, a bootstrap join and its accept, a PSK join and the agent's tunnel coming up,
 * a delete; the events' data is what GET /api/v1/clusters/NAME answers, without secrets, and ids increase. A
 * viewer key works, a group-scoped key sees only its group, a revoked key's stream ends within about a
 * second (and an expiring one at its expiry), the per-key cap answers 429, `cluster list --watch` prints the
 * changes (piped: text and JSON; on a terminal, through `script`, it redraws the table), and
 * closing the relay ends open streams with an `end` event. The caps and slow consumers: test/abuse/events-streams.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinCommandWords } from '../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import {
  adminEnvOf,
  buildIfStale,
  CLIENT_BIN,
  cleanEnv,
  cleanup,
  curl,
  Proc,
  RELAY_BIN,
  type ReadyLine,
  run,
  sleep,
  startServe,
  tempDir,
} from './cli-harness.js';
import { api, EventCurl } from './events-fixture.js';
import { pollUntil } from './helpers/wait.js';

let relay: Proc;
let ready: ReadyLine;
let dataDir: string;
let adminEnv: NodeJS.ProcessEnv;
let caFile: string;
let adminKey: string;

const admin = (...args: string[]) => run(RELAY_BIN, args, adminEnv);
const feed = (key: string) => new EventCurl({ url: ready.url, key, caFile });
const call = (method: string, path: string, body?: unknown) =>
  api({ url: ready.url, key: adminKey, caFile }, method, path, body);

async function newKey(role: string): Promise<{ token: string; id: string }> {
  const r = await call('POST', '/api/v1/tokens', { role });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { token: String(r.body.token), id: String(r.body.id) };
}

async function createCluster(name: string, group = 'default') {
  const r = await call('POST', '/api/v1/clusters', { name, group });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { bootstrap: { psk: string; joinCommand: string } };
}

/** The agent's handshake time from its status.json (it writes it a moment after the handshake). */
async function firstHandshakeOf(stateDir: string): Promise<number> {
  // A read before status.json is written, or while it is rewritten, is "not yet".
  const { value } = await pollUntil({
    what: "the agent's handshake",
    read: () =>
      (JSON.parse(readFileSync(join(stateDir, 'status.json'), 'utf8')) as { lastHandshake: string | null })
        .lastHandshake,
    until: (at) => at !== null,
    timeoutMs: 10_000,
    intervalMs: 50,
  });
  return Date.parse(value ?? '');
}

beforeAll(async () => {
  buildIfStale();
  dataDir = tempDir('events-feed-');
  ({ proc: relay, ready } = await startServe(dataDir, '127.0.0.1:0'));
  adminEnv = adminEnvOf(ready);
  adminKey = ready.adminKey ?? '';
  caFile = join(dataDir, 'tls', 'cert.pem');
  await createCluster('before');
}, 120_000);

afterAll(async () => {
  await relay?.stop();
  await cleanup();
});

describe('GET /api/v1/events', () => {
  it('streams the snapshot, then create, accept, the agent coming up and delete, as GET shows them', async () => {
    const stream = feed(adminKey);
    try {
      const readyAt = await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready');
      const snapshot = stream.events.slice(0, stream.events.indexOf(readyAt));
      expect(snapshot.map((e) => e.event)).toEqual(['cluster']);
      // GET adds whether the agent impersonates there (read from the values) and the list of its agents; the feed
      // carries neither (only the agent counts).
      const { impersonation, agents, ...got } = (await call('GET', '/api/v1/clusters/before')).body;
      expect(impersonation).toBe('on');
      expect(agents).toEqual([]);
      expect(JSON.parse(snapshot[0]!.data)).toEqual(got);

      const created = await createCluster('edge');
      await stream.waitFor(
        (e) => e.event === 'cluster' && e.data.includes('"name":"edge"'),
        10_000,
        'edge created',
      );
      expect(stream.clusters('edge')[0]).toMatchObject({ status: 'Pending', connected: false });

      // A bootstrap join leaves "boot" Pending (awaiting acceptance); accept turns it Accepted.
      const bootstrap = await newKey('bootstrap');
      const bootDir = join(tempDir('events-boot-'), 'agent');
      const joinArgs = ['--relay', ready.url, '--ca-pin', ready.caPin, '--state-dir', bootDir];
      await run(
        CLIENT_BIN,
        [
          'join',
          '--cluster',
          'boot',
          '--psk',
          bootstrap.token,
          ...joinArgs,
          '--wait',
          '--wait-timeout',
          '1s',
        ],
        cleanEnv(),
      );
      const pending = await stream.waitFor(
        (e) => e.data.includes('"name":"boot"'),
        10_000,
        'boot registered',
      );
      expect(JSON.parse(pending.data)).toMatchObject({ status: 'Pending' });
      expect(JSON.parse(pending.data).conditions[0]).toMatchObject({ reason: 'AwaitingAcceptance' });
      const accepted = await admin('cluster', 'accept', 'boot');
      expect(accepted.code, accepted.stderr).toBe(0);
      await stream.waitFor(
        (e) => e.data.includes('"name":"boot"') && e.data.includes('"status":"Accepted"'),
        10_000,
        'boot accepted',
      );

      // The PSK join of "edge", then its agent: the event with connected=true is the tunnel coming up.
      const edgeDir = join(tempDir('events-edge-'), 'agent');
      const words = joinCommandWords(created.bootstrap.joinCommand);
      const joined = await run(CLIENT_BIN, [...words, '--state-dir', edgeDir, '--wait'], cleanEnv());
      expect(joined.code, joined.stderr).toBe(0);
      const agent = new Proc(CLIENT_BIN, ['run', '--state-dir', edgeDir], cleanEnv());
      try {
        const up = await stream.waitFor(
          (e) => e.data.includes('"name":"edge"') && e.data.includes('"connected":true'),
          30_000,
          'edge connected',
        );
        expect(JSON.parse(up.data)).toMatchObject({ status: 'Accepted', path: 'relayed' });
        // The agent's first handshake (its tunnel up) to the event reaching curl: same host, same clock.
        const handshakeAt = await firstHandshakeOf(edgeDir);
        const latencyMs = up.at - handshakeAt;
        console.log(`events feed: tunnel up -> event in ${latencyMs} ms`);
        expect(latencyMs).toBeLessThan(1_000);
      } finally {
        await agent.stop();
      }

      const deleted = await admin('cluster', 'delete', 'edge');
      expect(deleted.code, deleted.stderr).toBe(0);
      const gone = await stream.waitFor((e) => e.event === 'cluster-deleted', 10_000, 'edge deleted');
      expect(JSON.parse(gone.data)).toEqual({ name: 'edge' });

      const ids = stream.events.map((e) => Number(e.id));
      for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]!);
      expect(stream.raw).not.toContain(created.bootstrap.psk);
      expect(stream.raw).not.toMatch(/presharedKey|trk_|tpsk_|tagt_/);
      expect(stream.raw).toMatch(/^id: \d+\nevent: cluster\ndata: \{/);
    } finally {
      stream.stop();
    }
  }, 120_000);

  it('a viewer key watches every group; a group-scoped key only its own', async () => {
    const viewer = feed((await newKey('viewer')).token);
    const blue = feed((await newKey('group-editor:blue')).token);
    try {
      await viewer.waitFor((e) => e.event === 'ready', 15_000, 'viewer ready');
      const blueReady = await blue.waitFor((e) => e.event === 'ready', 15_000, 'blue ready');
      expect(blue.events.indexOf(blueReady)).toBe(0);
      await createCluster('red-1', 'red');
      await createCluster('blue-1', 'blue');
      // Events go out in order: once blue-1 arrived, red-1 would have arrived before it.
      await blue.waitFor((e) => e.data.includes('"name":"blue-1"'), 10_000, 'blue-1 on the blue stream');
      expect(blue.raw).not.toContain('red-1');
      await viewer.waitFor((e) => e.data.includes('"name":"blue-1"'), 10_000, 'blue-1 on the viewer stream');
      expect(viewer.clusters('red-1')).toHaveLength(1);
    } finally {
      viewer.stop();
      blue.stop();
    }
  }, 60_000);

  it("ends a revoked key's stream within about a second, with an end event", async () => {
    const key = await newKey('viewer');
    const stream = feed(key.token);
    await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready');
    const revokedAt = Date.now();
    const r = await call('DELETE', `/api/v1/tokens/${key.id}`);
    expect(r.status).toBe(200);
    await stream.exited;
    const endedMs = Date.now() - revokedAt;
    console.log(`events feed: revoked key's stream ended ${endedMs} ms after the revoke call`);
    expect(endedMs).toBeLessThan(1_500);
    const end = stream.events.at(-1);
    expect(end?.event).toBe('end');
    expect(JSON.parse(end?.data ?? '{}')).toMatchObject({ code: 'UNAUTHENTICATED' });
    const again = await curl([
      '-sS',
      '--cacert',
      caFile,
      '-H',
      `Authorization: Bearer ${key.token}`,
      `${ready.url}/api/v1/events`,
    ]);
    expect(again.stdout).toContain('"UNAUTHENTICATED"');
  }, 60_000);

  it("ends an expiring key's stream at its expiry, within about a second", async () => {
    const r = await call('POST', '/api/v1/tokens', { role: 'viewer', expiresIn: '3s' });
    expect(r.status).toBe(201);
    const expiresAt = Date.parse(String(r.body.expiresAt));
    const stream = feed(String(r.body.token));
    await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready');
    await stream.exited;
    const lateMs = Date.now() - expiresAt;
    console.log(`events feed: expiring key's stream ended ${lateMs} ms after its expiry`);
    expect(lateMs).toBeGreaterThanOrEqual(-50);
    expect(lateMs).toBeLessThan(1_500);
    expect(stream.events.at(-1)?.event).toBe('end');
    expect(JSON.parse(stream.events.at(-1)?.data ?? '{}')).toMatchObject({ code: 'UNAUTHENTICATED' });
  }, 60_000);

  it('refuses a ninth stream of one key with 429 LIMIT_EXCEEDED; agents and bootstrap keys get 403', async () => {
    const key = await newKey('viewer');
    const streams = Array.from({ length: 8 }, () => feed(key.token));
    try {
      for (const s of streams) await s.waitFor((e) => e.event === 'ready', 20_000, 'ready');
      const ninth = await api({ url: ready.url, key: key.token, caFile }, 'GET', '/api/v1/events');
      expect(ninth.status).toBe(429);
      expect(ninth.body).toMatchObject({ error: { code: 'LIMIT_EXCEEDED' } });
      expect(String((ninth.body.error as { message: string }).message)).toContain(key.id);
      streams.pop()?.stop();
      await sleep(300);
      const reopened = feed(key.token);
      streams.push(reopened);
      await reopened.waitFor((e) => e.event === 'ready', 15_000, 'ready after one closed');
    } finally {
      for (const s of streams) s.stop();
    }
    const bootstrap = await newKey('bootstrap');
    const refused = await api({ url: ready.url, key: bootstrap.token, caFile }, 'GET', '/api/v1/events');
    expect(refused.status).toBe(403);
  }, 60_000);

  it('cluster list --watch, piped, prints the table and then one line per change (text and -o json)', async () => {
    const text = new Proc(RELAY_BIN, ['cluster', 'list', '--watch', '--group', 'watch'], adminEnv);
    const json = new Proc(RELAY_BIN, ['cluster', 'list', '--watch', '-o', 'json'], adminEnv);
    try {
      await text.waitFor((p) => p.stdout.includes('no clusters'), 20_000, 'the (empty) table');
      await json.waitFor((p) => p.stdout.includes('{"event":"ready"}'), 20_000, 'the JSON snapshot');
      await createCluster('watched', 'watch');
      await createCluster('elsewhere', 'other');
      await admin('cluster', 'delete', 'watched');
      await text.waitFor((p) => p.stdout.includes('watched  deleted'), 10_000, 'the deletion line');
      await json.waitFor((p) => p.stdout.includes('"cluster-deleted"'), 10_000, 'the JSON deletion');
      const lines = text.stdout.trimEnd().split('\n');
      expect(lines[0]).toBe('no clusters');
      expect(lines[1]).toMatch(
        /^watched +watched +watch +Pending +Never connected +no agent yet +Unknown +none +- +- +\d+s$/,
      );
      expect(lines.slice(2)).toEqual(['watched  deleted']);
      const objects = json.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { event: string; cluster?: { name: string }; name?: string });
      const after = objects.slice(objects.findIndex((o) => o.event === 'ready') + 1);
      expect(after.map((o) => o.cluster?.name ?? o.name)).toEqual(['watched', 'elsewhere', 'watched']);
      expect(after.map((o) => o.event)).toEqual(['cluster', 'cluster', 'cluster-deleted']);
      text.child.kill('SIGINT');
      json.child.kill('SIGINT');
      expect(await text.exited).toBe(0);
      expect(await json.exited).toBe(0);
    } finally {
      await text.stop();
      await json.stop();
    }
  }, 60_000);

  it('cluster list --watch on a terminal redraws the table as clusters change; Ctrl-C exits 0', async () => {
    // `script` gives the command a pseudo-terminal; Ctrl-C is typed into it. `exec` replaces script's shell
    // (dash does not exec a lone command), so the signal reaches only the command.
    const command = [
      process.execPath,
      ...NODE_FLAGS,
      RELAY_BIN,
      'cluster',
      'list',
      '--watch',
      '--group',
      'tty',
    ];
    const tty = spawn('script', ['-qfec', `exec ${command.map((w) => `'${w}'`).join(' ')}`, '/dev/null'], {
      env: { ...adminEnv, TERM: 'xterm', COLUMNS: '200' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    tty.stdout.on('data', (d: Buffer) => {
      screen += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => tty.on('close', (code) => resolve(code)));
    const lastFrame = () => screen.slice(screen.lastIndexOf('\u001b[2J'));
    const until = (pred: () => boolean, what: string) =>
      pollUntil({ what: `${what} on the terminal`, read: lastFrame, until: pred, timeoutMs: 15_000 });
    try {
      await until(
        () => /no clusters[\s\S]*watching .*: 0 cluster\(s\); Ctrl-C to quit/.test(lastFrame()),
        'empty table',
      );
      await createCluster('on-tty', 'tty');
      await until(
        () => /NAME +DISPLAY NAME/.test(lastFrame()) && lastFrame().includes('on-tty'),
        'the new row',
      );
      expect(lastFrame()).toMatch(/1 cluster\(s\)/);
      await admin('cluster', 'delete', 'on-tty');
      await until(() => lastFrame().includes('no clusters'), 'the row gone');
      tty.stdin.write('\u0003');
      expect(await exited).toBe(0);
    } finally {
      tty.kill('SIGKILL');
    }
  }, 60_000);

  it('ends open streams with an end event (CLOSED) when the relay closes, and --watch keeps retrying', async () => {
    const stream = feed(adminKey);
    const watch = new Proc(RELAY_BIN, ['cluster', 'list', '--watch'], adminEnv);
    await stream.waitFor((e) => e.event === 'ready', 15_000, 'ready');
    await watch.waitFor((p) => p.stdout.includes('NAME'), 20_000, 'the table');
    const stoppedAt = Date.now();
    await relay.stop('SIGTERM');
    await stream.exited;
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    expect(stream.events.at(-1)).toMatchObject({ event: 'end' });
    expect(JSON.parse(stream.events.at(-1)?.data ?? '{}')).toMatchObject({ code: 'CLOSED' });
    await watch.waitFor((p) => /reconnecting in/.test(p.stderr), 10_000, 'a reconnect note');
    watch.child.kill('SIGINT');
    expect(await watch.exited).toBe(0);
  }, 60_000);
});
