/**
 * The built binaries run as users run them after `npm install -g` or in the container image: executed
 * directly, through their `#!/usr/bin/env -S node <flags>` line (shared/kit/node-flags.ts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS } from '../shared/kit/node-flags.js';
import { CLIENT_BIN, RELAY_BIN, ROOT } from './cli-harness.js';

const version = (JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string }).version;

describe.each([
  ['tunnel-relay', RELAY_BIN],
  ['tunnel-client', CLIENT_BIN],
])('%s executed directly', (name, bin) => {
  it('is executable, keeps the #! line with the Node flags, and runs', () => {
    expect(statSync(bin).mode & 0o111).not.toBe(0);
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
    const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 15_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')[0]).toBe(`${name} ${version}`);
    expect(r.status).toBe(0);
  });
});
