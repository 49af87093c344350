/**
 * A real agent for CLI tests: `tunnel-client join --wait` with a PSK (the built CLI, test/cli-harness.ts), then
 * `tunnel-client run` on the state it wrote. Throws with the join's stderr when the join fails.
 */
import { join } from 'node:path';
import { joinCommandWords } from '../../shared/kit/cli/join-command-words.js';
import { CLIENT_BIN, cleanEnv, Proc, run, tempDir } from '../cli-harness.js';

export interface JoinedAgentOptions {
  /** The relay URL the agent joins through (--relay). */
  relayUrl: string;
  cluster: string;
  psk: string;
  caPin: string;
  /** The agent's upstream URL (--upstream). */
  upstream: string;
  /** Names the agent's temporary state directory. */
  prefix: string;
  /** More `join` flags (e.g. `--egress 443-only`). */
  joinArgs?: readonly string[];
}

/** Joins, then starts the agent; the caller stops the returned process. */
export async function startJoinedAgent(o: JoinedAgentOptions): Promise<Proc> {
  const stateDir = await joinAgent(o);
  return new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
}

/** Joins (`join --wait`) and returns the state directory `tunnel-client run` starts from. */
export async function joinAgent(o: JoinedAgentOptions): Promise<string> {
  const stateDir = join(tempDir(`${o.prefix}-`), 'state');
  const joined = await run(
    CLIENT_BIN,
    [
      'join',
      '--relay',
      o.relayUrl,
      '--cluster',
      o.cluster,
      '--psk',
      o.psk,
      '--ca-pin',
      o.caPin,
      '--state-dir',
      stateDir,
      '--upstream',
      o.upstream,
      ...(o.joinArgs ?? []),
      '--wait',
    ],
    cleanEnv(),
    40_000,
  );
  if (joined.code !== 0) throw new Error(`join exited ${joined.code}: ${joined.stderr}`);
  return stateDir;
}

/**
 * Runs `cluster create`'s printed join command (its words, as a user pastes it) with `--upstream` and a state
 * directory, then starts the agent; the caller stops the returned process.
 */
export async function startAgentFromJoinCommand(o: {
  joinCommand: string;
  upstream: string;
  prefix: string;
}): Promise<Proc> {
  const stateDir = join(tempDir(`${o.prefix}-`), 'state');
  const words = joinCommandWords(o.joinCommand);
  const joined = await run(
    CLIENT_BIN,
    [...words, '--state-dir', stateDir, '--upstream', o.upstream, '--wait'],
    cleanEnv(),
    40_000,
  );
  if (joined.code !== 0) throw new Error(`join exited ${joined.code}: ${joined.stderr}`);
  return new Proc(CLIENT_BIN, ['run', '--state-dir', stateDir], cleanEnv());
}
