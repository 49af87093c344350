/**
 * A real agent inside a network namespace: `tunnel-client join --wait` with the join command the relay printed
 * (`bootstrap.joinCommand`), then `tunnel-client run` on the state it wrote, both run in the namespace with the
 * built CLI (test/cli-harness.ts). The join's stderr must carry no error.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import { NODE_FLAGS } from '../../shared/kit/node-flags.js';
import { CLIENT_BIN, tempDir } from '../cli-harness.js';
import type { Netns } from './netns.js';
import type { ProcessHandle } from './process.js';

export interface NamespaceAgentOptions {
  /** The join command the relay printed for the cluster. */
  joinCommand: string;
  /** Join flags after the printed ones (e.g. --upstream, --egress). */
  extraArgs?: readonly string[];
  /** Names the agent's temporary state directory. */
  prefix: string;
  /** How long the running agent may live before the process harness kills it. */
  runTimeoutMs: number;
  /** Added to the running agent's environment. */
  env?: Record<string, string>;
}

export interface NamespaceAgent {
  stateDir: string;
  proc: ProcessHandle;
}

export async function startNamespaceAgent(ns: Netns, o: NamespaceAgentOptions): Promise<NamespaceAgent> {
  const stateDir = join(tempDir(`${o.prefix}-`), 'state');
  const joined = await ns.exec(
    process.execPath,
    [
      ...NODE_FLAGS,
      CLIENT_BIN,
      ...joinCommandWords(o.joinCommand),
      ...(o.extraArgs ?? []),
      '--state-dir',
      stateDir,
      '--wait',
    ],
    { timeoutMs: 40_000 },
  );
  expect(joined.stderr).not.toMatch(/error/i);
  const proc = ns.spawn(process.execPath, [...NODE_FLAGS, CLIENT_BIN, 'run', '--state-dir', stateDir], {
    timeoutMs: o.runTimeoutMs,
    env: o.env,
  });
  return { stateDir, proc };
}
