/**
 * Abuse replay: the printed install command must not hand the one-time install URL (and so the PSK) to other local
 * users. Any user can read every process's argv from /proc/PID/cmdline; a command with the URL in curl's argv lost
 * the link to a user polling /proc (who then holds the PSK, while the operator's curl gets 410). Here the line the
 * real relay prints runs as printed, fed to sh and to bash on stdin as a pasted line is, with real curl and kubectl,
 * while another process reads every /proc/PID/cmdline in a loop: no argv ever holds the token, though the same
 * poller does catch it in curl's argv when the URL is given there (the form the relay printed before). A second run
 * of the line, after the link was used, prints on stderr the command that makes a new link, and that command's line
 * works. The form without a CA pin (a publicly trusted certificate, here a relay behind a TLS terminator) keeps the
 * URL out of argv the same way.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, cleanup, curl, RELAY_BIN, run, startServe, tempDir } from '../cli-harness.js';
import { runPasted } from '../helpers/pasted-line.js';
import { api, type ServedRelay, serve } from './relay-fixture.js';
import { abuseScale } from './scale.js';

const APPLY = ' | kubectl apply -f -';
/**
 * kubectl reading the manifests from the pipe without a Kubernetes API server (`apply` needs one): it parses
 * every object and prints its kind and name.
 */
const LOCAL_KUBECTL = ' | kubectl label --local -f - -o name tunnel-test=seen';

let relay: ServedRelay;

beforeAll(async () => {
  buildIfStale();
  relay = await serve(tempDir('abuse-install-command-'));
}, 60_000);

afterAll(async () => {
  await relay?.proc.stop();
  await cleanup();
});

interface Bootstrap {
  installUrl: string;
  installCommand: string;
}

async function create(url: string, adminKey: string, name: string): Promise<Bootstrap> {
  const r = await api(url, 'POST', '/api/v1/clusters', { token: adminKey, body: { name } });
  if (r.status !== 201) throw new Error(`cluster create ${name}: ${r.status} ${r.text}`);
  return r.body.bootstrap;
}

function tokenOf(b: Bootstrap): string {
  return b.installUrl.slice(b.installUrl.lastIndexOf('/') + 1);
}

/**
 * Reads /proc/PID/cmdline of every process in a tight loop (as an unprivileged local user can) until `stop` exists;
 * prints every distinct argv it saw, words joined by spaces. It is given nothing secret, so its own argv holds none.
 */
const POLLER = `
const fs = require('node:fs');
const [stop] = process.argv.slice(1);
const seen = new Set();
const deadline = Date.now() + 40000;
fs.writeSync(1, 'polling\\n');
while (!fs.existsSync(stop) && Date.now() < deadline) {
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\\d+$/.test(pid)) continue;
    try {
      const argv = fs.readFileSync('/proc/' + pid + '/cmdline', 'latin1');
      if (argv) seen.add(argv.split('\\0').join(' ').trim());
    } catch {}
  }
}
fs.writeSync(1, JSON.stringify([...seen]));
`;

class ArgvPoller {
  readonly #child: ChildProcess;
  readonly #stop: string;
  #out = '';
  readonly #done: Promise<void>;

  private constructor(stop: string) {
    this.#stop = stop;
    this.#child = spawn(process.execPath, ['-e', POLLER, stop], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.#child.stdout!.on('data', (d: Buffer) => {
      this.#out += d.toString();
    });
    this.#done = new Promise((resolve) => this.#child.on('close', () => resolve()));
  }

  static async start(): Promise<ArgvPoller> {
    const poller = new ArgvPoller(join(tempDir('argv-poller-'), 'stop'));
    const started = Date.now();
    while (!poller.#out.startsWith('polling\n')) {
      if (Date.now() - started > 10_000) throw new Error('the /proc poller did not start within 10 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    return poller;
  }

  /** Stops polling; every argv seen meanwhile. */
  async stop(): Promise<string[]> {
    if (!existsSync(this.#stop)) writeFileSync(this.#stop, '');
    await this.#done;
    return JSON.parse(this.#out.slice('polling\n'.length)) as string[];
  }
}

/** Runs `line` in `shell` under the /proc poller; what it printed and every argv seen while it ran. */
async function runWatched(shell: 'sh' | 'bash', line: string) {
  const poller = await ArgvPoller.start();
  const result = await runPasted(shell, line);
  return { ...result, argvs: await poller.stop() };
}

describe('the printed install command keeps the one-time URL out of every argv', () => {
  it('fetches the manifests into kubectl in sh and bash; no process argv ever holds the token', async () => {
    for (let round = 0; round < abuseScale(); round++) {
      for (const shell of ['sh', 'bash'] as const) {
        const b = await create(relay.ready.url, relay.adminKey, `argv-${shell}-${round}`);
        expect(b.installCommand.endsWith(APPLY)).toBe(true);
        const token = tokenOf(b);
        const watched = await runWatched(shell, b.installCommand.replace(APPLY, LOCAL_KUBECTL));
        expect(watched.code, watched.stderr).toBe(0);
        // kubectl got every object through the pipe.
        expect(watched.stdout.split('\n').filter(Boolean)).toEqual([
          'namespace/tunnel-system',
          'serviceaccount/tunnel-client',
          'clusterrole.rbac.authorization.k8s.io/tunnel-client-impersonator',
          'clusterrolebinding.rbac.authorization.k8s.io/tunnel-client-impersonator',
          'clusterrolebinding.rbac.authorization.k8s.io/tunnel-relay:admin',
          'clusterrolebinding.rbac.authorization.k8s.io/tunnel-relay:viewer',
          'clusterrolebinding.rbac.authorization.k8s.io/tunnel-relay:group-editor:default',
          'secret/tunnel-client-join',
          'statefulset.apps/tunnel-client',
        ]);
        // The poller saw curl and kubectl run (so it would have seen a token there) but never the token.
        expect(watched.argvs.some((a) => /^curl .*-K -$/.test(a))).toBe(true);
        expect(watched.argvs.some((a) => a.startsWith('kubectl label --local'))).toBe(true);
        expect(watched.argvs.filter((a) => a.includes(token) || a.includes('/api/v1/install/'))).toEqual([]);
      }
    }
  });

  it('the same poller catches the token when the URL is in curl argv (the form printed before)', async () => {
    const b = await create(relay.ready.url, relay.adminKey, 'argv-leaky');
    const poller = await ArgvPoller.start();
    const fetched = await curl(['-fsS', '--insecure', b.installUrl]);
    const argvs = await poller.stop();
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(argvs.filter((a) => a.includes(tokenOf(b))).length).toBeGreaterThan(0);
  });

  it('a second run says on stderr what to run; that command prints a line that works', async () => {
    const name = 'argv-twice';
    const b = await create(relay.ready.url, relay.adminKey, name);
    const first = await runPasted('sh', b.installCommand.replace(APPLY, LOCAL_KUBECTL));
    expect(first.code, first.stderr).toBe(0);
    // As printed, with the real `kubectl apply -f -`: it gets no objects, after the line said what to run.
    const second = await runPasted('sh', b.installCommand);
    expect(second.code).not.toBe(0);
    const hint = `run tunnel-relay cluster rotate-psk ${name} for a new one`;
    const lines = second.stderr.trim().split('\n');
    expect(lines).toEqual([
      'curl: (22) The requested URL returned error: 410',
      `install link refused (already used, expired or replaced): ${hint}`,
      'error: no objects passed to apply',
    ]);
    // What it says to run (with --print-install-command, which prints the new line alone) gives a working line.
    const rotated = await run(
      RELAY_BIN,
      ['cluster', 'rotate-psk', name, '--print-install-command'],
      relay.adminEnv,
    );
    expect(rotated.code, rotated.stderr).toBe(0);
    const again = await runPasted('bash', rotated.stdout.trim().replace(APPLY, LOCAL_KUBECTL));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('secret/tunnel-client-join');
  });

  it('without a CA pin (a publicly trusted certificate) curl is not pinned and the URL stays out of argv too', async () => {
    // A relay behind a TLS terminator (--plain-http) with no --public-ca-file advertises no pin. The line as it
    // prints it, with its public URL pointed at the relay's own plain HTTP port (no terminator here).
    const { proc, ready } = await startServe(tempDir('abuse-install-command-plain-'), '127.0.0.1:0', [
      '--plain-http',
      '--public-url',
      'https://relay.invalid',
    ]);
    try {
      const b = await create(ready.url, ready.adminKey ?? '', 'argv-public');
      expect(b.installCommand).not.toContain('pinnedpubkey');
      expect(b.installCommand).not.toContain('--insecure');
      expect(b.installUrl.startsWith('https://relay.invalid/api/v1/install/tin_')).toBe(true);
      const line = b.installCommand.replace('https://relay.invalid', ready.url).replace(APPLY, LOCAL_KUBECTL);
      const watched = await runWatched('bash', line);
      expect(watched.code, watched.stderr).toBe(0);
      expect(watched.stdout).toContain('statefulset.apps/tunnel-client');
      expect(watched.argvs.some((a) => a === 'curl -fsS -K -')).toBe(true);
      expect(watched.argvs.filter((a) => a.includes(tokenOf(b)))).toEqual([]);
      const second = await runPasted('sh', b.installCommand.replace('https://relay.invalid', ready.url));
      expect(second.stderr).toContain('run tunnel-relay cluster rotate-psk argv-public for a new one');
    } finally {
      await proc.stop();
    }
  });
});
