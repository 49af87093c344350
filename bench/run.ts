/**
 * Runs every compiled benchmark (dist/bench/*-bench.js) one after another, each in its own process so
 * one benchmark's heap and JIT state never colour another's. `npm run bench [name-filter]`.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeMachine } from './machine.js';

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? '';
const files = readdirSync(here)
  .filter((f) => f.endsWith('-bench.js') && f.includes(filter))
  .sort();

console.log(`# benchmarks on ${describeMachine()}`);
let failed = 0;
for (const f of files) {
  console.log(`\n## ${f.replace(/\.js$/, '')}`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, f)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
