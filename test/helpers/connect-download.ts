/**
 * A download with curl through the relay's CONNECT proxy (the admin key as the proxy credential), hashed as the
 * bytes arrive, for tests that move a large body across path changes. curl is killed after `killAfterMs`.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';

export interface ConnectDownloadOptions {
  /** The relay's URL, used as the proxy. */
  proxyUrl: string;
  /** The relay's CA certificate file (--proxy-cacert). */
  caFile: string;
  adminKey: string;
  /** What to fetch through the tunnel, e.g. http://NAME.clusters.local:PORT/bytes?n=N. */
  url: string;
  /** curl's --limit-rate, e.g. 2500K. */
  limitRate?: string;
  killAfterMs: number;
}

export interface DownloadResult {
  code: number | null;
  stderr: string;
  bytes: number;
  sha256: string;
}

export interface Download {
  /** Bytes read so far. */
  received(): number;
  /** Resolves when curl exits: its code, stderr, the bytes and their sha256. */
  done: Promise<DownloadResult>;
}

export function connectDownload(o: ConnectDownloadOptions): Download {
  const rate = o.limitRate === undefined ? [] : ['--limit-rate', o.limitRate];
  const args = [
    '-sS',
    '-p',
    '-x',
    o.proxyUrl,
    '--proxy-cacert',
    o.caFile,
    '--proxy-header',
    `Proxy-Authorization: Bearer ${o.adminKey}`,
    ...rate,
    o.url,
  ];
  const c = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const h = createHash('sha256');
  let bytes = 0;
  let stderr = '';
  c.stdout.on('data', (d: Buffer) => {
    bytes += d.length;
    h.update(d);
  });
  c.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<DownloadResult>((resolve) => {
    const timer = setTimeout(() => c.kill('SIGKILL'), o.killAfterMs);
    c.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, bytes, sha256: h.digest('hex') });
    });
  });
  return { received: () => bytes, done };
}
