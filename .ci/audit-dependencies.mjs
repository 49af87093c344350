#!/usr/bin/env node
/**
 * Audits the production dependencies (`npm audit --omit=dev --audit-level=high`) for CI and `npm run audit:prod`.
 *
 * - A high or critical advisory against a production package: each is listed, exit 1.
 * - Only lower advisories, or none: a one-line summary, exit 0.
 * - The advisory endpoint cannot be used (unreachable, offline, a registry or mirror without it: npm reports
 *   "audit endpoint returned an error", e.g. 405 Method Not Allowed), or npm does not answer within the time limit:
 *   a warning naming the reason, exit 0. The audit then has to be run where the endpoint is reachable.
 * - Anything else npm fails at (no lockfile, a broken tree): its message, exit 1.
 *
 * Extra arguments go to npm (for example `--registry URL`).
 */
import { spawnSync } from 'node:child_process';

const FAIL_LEVELS = ['high', 'critical'];
const TIME_LIMIT_MS = 180_000;

const npm = spawnSync(
  'npm',
  [
    'audit',
    '--omit=dev',
    `--audit-level=${FAIL_LEVELS[0]}`,
    '--json',
    '--fetch-retries=1',
    '--fetch-timeout=30000',
    ...process.argv.slice(2),
  ],
  { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: TIME_LIMIT_MS },
);

/** npm's JSON answer, or null when there is none. */
function parseReport(stdout) {
  try {
    return JSON.parse(stdout);
  } catch {
    return null;
  }
}

function warnSkipped(reason) {
  // npm's message names the endpoint's URL; the log keeps the status, not the host.
  const shown = reason.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<advisory endpoint>');
  console.error(`warning: dependency audit skipped: the advisory endpoint could not be used (${shown})`);
  console.error('warning: run `npm run audit:prod` where the registry answers audits (see SECURITY.md)');
  process.exit(0);
}

if (npm.error) {
  if (npm.error.code === 'ETIMEDOUT') warnSkipped(`no answer within ${TIME_LIMIT_MS / 1000} s`);
  console.error(`dependency audit failed: cannot run npm (${npm.error.message})`);
  process.exit(1);
}

const report = parseReport(npm.stdout);
const counts = report?.metadata?.vulnerabilities;
if (counts) {
  const failing = Object.values(report.vulnerabilities ?? {}).filter((v) => FAIL_LEVELS.includes(v.severity));
  const total = report.metadata.dependencies?.prod;
  if (failing.length === 0) {
    console.log(
      `dependency audit: no high or critical advisories in ${total} production packages (${counts.total} lower)`,
    );
    process.exit(0);
  }
  console.error(`dependency audit: ${failing.length} production packages with high or critical advisories:`);
  for (const v of failing) {
    const advisories = (v.via ?? []).filter((a) => typeof a === 'object').map((a) => `${a.title} ${a.url}`);
    console.error(
      `  ${v.name} (${v.severity}, ${v.range}): ${advisories.join('; ') || `via ${v.via.join(', ')}`}`,
    );
  }
  process.exit(1);
}

if (/audit endpoint returned an error/.test(npm.stderr)) {
  warnSkipped(report?.message ?? 'npm: audit endpoint returned an error');
}
console.error(`dependency audit failed: npm audit exited ${npm.status}`);
console.error(npm.stderr.trim() || npm.stdout.trim());
process.exit(1);
