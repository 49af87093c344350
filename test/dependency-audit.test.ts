/**
 * The CI dependency audit (.ci/audit-dependencies.mjs) with the real npm client against a registry served here:
 * advisories come from the bulk advisory endpoint npm posts the production tree to, so the script is checked
 * against npm's real report format. A high or critical advisory fails; lower ones and none pass; an endpoint that
 * refuses (405, as the sandbox's registry did) or cannot be reached is a warning, not a failure.
 */
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from './cli-harness.js';

const SCRIPT = join(ROOT, '.ci/audit-dependencies.mjs');

type Severity = 'low' | 'moderate' | 'high' | 'critical';
const CVSS: Record<Severity, number> = { low: 2, moderate: 5, high: 7.5, critical: 9.8 };

let server: Server | undefined;
/** Package names npm sent to the bulk endpoint. */
let asked: string[] = [];

afterEach(async () => {
  const s = server;
  server = undefined;
  if (s) await new Promise<void>((r) => s.close(() => r()));
  asked = [];
});

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks);
  return (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
}

/** A registry whose bulk endpoint reports `advisories` (package -> severity), or answers every request `status`. */
async function registry(opts: { advisories?: Record<string, Severity>; status?: number }): Promise<string> {
  server = createServer(async (req, res) => {
    const text = await body(req);
    if (opts.status) {
      res.writeHead(opts.status).end('not here');
      return;
    }
    if (req.method === 'POST' && req.url === '/-/npm/v1/security/advisories/bulk') {
      const tree = JSON.parse(text) as Record<string, string[]>;
      asked = Object.keys(tree);
      const out: Record<string, unknown[]> = {};
      for (const [name, severity] of Object.entries(opts.advisories ?? {})) {
        if (!tree[name]) continue;
        out[name] = [
          {
            // npm caches what it computed per advisory id: a new id for every advisory served.
            id: randomInt(1, 2 ** 47),
            url: `https://advisories.example/${name}`,
            title: `test advisory for ${name}`,
            severity,
            vulnerable_versions: '>=0.0.0',
            cwe: [],
            cvss: { score: CVSS[severity], vectorString: null },
          },
        ];
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      return;
    }
    // Packuments for the packages with advisories (npm reads their versions to compute the affected range).
    const name = decodeURIComponent((req.url ?? '/').slice(1));
    const version = tree(name);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        name,
        'dist-tags': { latest: version },
        versions: { [version]: { name, version } },
      }),
    );
  });
  const listening = server;
  await new Promise<void>((r) => listening.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}/`;
}

const lockfile = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string }>;
};

/** The installed version of a package, from the lockfile. */
function tree(name: string): string {
  return lockfile.packages[`node_modules/${name}`]?.version ?? '0.0.0';
}

function audit(registryUrl: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [SCRIPT, '--registry', registryUrl], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), 120_000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('production dependency audit', () => {
  it('fails on a high or critical advisory against a production package, naming it', async () => {
    const r = await audit(
      await registry({ advisories: { fastify: 'critical', pino: 'high', undici: 'low' } }),
    );
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /fastify \(critical, .*\): test advisory for fastify https:\/\/advisories\.example\/fastify/,
    );
    expect(r.stderr).toMatch(/pino \(high, /);
    expect(r.stderr).not.toMatch(/undici/);
    expect(asked).toContain('fastify');
    expect(asked).not.toContain('vitest'); // dev dependencies are not audited
  }, 150_000);

  it('passes with lower advisories only, and with none', async () => {
    const low = await audit(await registry({ advisories: { fastify: 'moderate', undici: 'low' } }));
    expect(low.code, low.stderr).toBe(0);
    expect(low.stdout).toMatch(/no high or critical advisories in \d+ production packages \(2 lower\)/);
    const none = await audit(await registry({}));
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/\(0 lower\)/);
  }, 150_000);

  it('warns, and does not fail, when the advisory endpoint refuses or cannot be reached', async () => {
    const refused = await audit(await registry({ status: 405 }));
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stderr).toMatch(/warning: dependency audit skipped: .*405 Method Not Allowed/);
    const closedPort = await registry({});
    const s = server;
    server = undefined;
    await new Promise<void>((r) => s?.close(() => r()));
    const unreachable = await audit(closedPort);
    expect(unreachable.code, unreachable.stderr).toBe(0);
    expect(unreachable.stderr).toMatch(/warning: dependency audit skipped: .*ECONNREFUSED/);
  }, 150_000);
});
