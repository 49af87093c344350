/**
 * `npm test`'s runner: vitest runs the projects of one process one after another, so the two integration lanes
 * (vitest.config.ts) run as two vitest processes side by side: the unit project then the main integration lane in
 * one, the waiting lane in the other. Arguments are passed to both (a file filter that names no file of a lane
 * leaves that lane empty). Exits non-zero when either lane fails; a signal stops both.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const lanes = [
  ['--project', 'unit', '--project', 'integration'],
  ['--project', 'integration-waiting'],
];
const extra = process.argv.slice(2);

const children = lanes.map((args) =>
  spawn(process.execPath, [vitest, 'run', '--passWithNoTests', ...args, ...extra], { stdio: 'inherit' }),
);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}
const codes = await Promise.all(
  children.map((child) => new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)))),
);
process.exit(codes.every((code) => code === 0) ? 0 : 1);
