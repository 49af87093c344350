/**
 * The agent's state directory (default ~/.tunnel-client, or $TUNNEL_CLIENT_STATE_DIR):
 *
 *   private.key   WireGuard private key, base64, 0600 (never leaves the host)
 *   credential    the agent credential `tac_...` issued at registration, 0600
 *   preshared.key the per-pair WireGuard preshared key from the relay, base64, 0600 (once Accepted)
 *   state.json    registration: relay URL, cluster, CA pin, public key, status, tunnel (without its
 *                 preshared key), flags, 0600
 *   status.json   written by the running agent: lease, connection and effective values, 0600
 *   agent.pid     the running agent's pid (a lock: one agent per state dir), 0600
 *
 * The directory is 0700. Every file is written to a temporary name with mode 0600 and renamed, so a
 * crash never leaves a half-written file and the secret is never readable by others, even briefly.
 * Every file read is checked first (shared/kit/secret-file.ts): one of ours open to group or others is set
 * back to 0600 and reported with INSECURE_FILE_MODE.
 *
 * State dirs written by older builds kept `tunnel.presharedKey` in state.json: readState moves it into
 * preshared.key and rewrites state.json without it.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { TunnelError } from '../../shared/errors.js';
import { shellQuote } from '../../shared/kit/cli/shell-quote.js';
import { type OnModeFixed, protectSecretFile, warnOnStderr } from '../../shared/kit/secret-file.js';
import type { AgentState, AgentStatusFile, Tunnel } from './types.js';

export const STATE_FILES = {
  privateKey: 'private.key',
  credential: 'credential',
  presharedKey: 'preshared.key',
  state: 'state.json',
  status: 'status.json',
  lock: 'agent.pid',
} as const;

/** Largest state file read back. */
const MAX_STATE_BYTES = 4 * 1024 * 1024;

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.TUNNEL_CLIENT_STATE_DIR;
  return resolve(fromEnv && fromEnv.length > 0 ? fromEnv : join(homedir(), '.tunnel-client'));
}

/**
 * ` --state-dir DIR` for the commands the agent prints as next steps, so they act on the state dir in use: empty when
 * that is the default one (TUNNEL_CLIENT_STATE_DIR or ~/.tunnel-client), else the directory, quoted for the shell.
 */
export function stateDirFlag(dir: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(dir) === defaultStateDir(env) ? '' : ` --state-dir ${shellQuote(resolve(dir))}`;
}

export interface StateDirOptions {
  /** Told when a file of the state dir had a wider mode than 0600 and was fixed (default: stderr). */
  readonly onModeFixed?: OnModeFixed;
}

/** state.json's `tunnel`: the Tunnel without its preshared key (that has its own file). */
type StoredTunnel = Omit<Tunnel, 'presharedKey'> & { readonly presharedKey?: unknown };
type StoredState = Omit<AgentState, 'tunnel'> & { readonly tunnel: StoredTunnel | null };

function withoutPresharedKey(state: AgentState): StoredState {
  if (!state.tunnel) return state;
  const { presharedKey: _key, ...tunnel } = state.tunnel;
  return { ...state, tunnel };
}

export class StateDir {
  readonly dir: string;
  readonly #onModeFixed: OnModeFixed;

  constructor(dir: string, opts: StateDirOptions = {}) {
    this.dir = resolve(dir);
    this.#onModeFixed = opts.onModeFixed ?? warnOnStderr;
  }

  path(name: keyof typeof STATE_FILES): string {
    return join(this.dir, STATE_FILES[name]);
  }

  /** True when a registration is saved here. */
  hasRegistration(): boolean {
    return existsSync(this.path('state'));
  }

  ensure(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    chmodSync(this.dir, 0o700);
  }

  #write(name: keyof typeof STATE_FILES, data: string): void {
    this.ensure();
    const target = this.path(name);
    const tmp = `${target}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, data, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, target);
  }

  #read(name: keyof typeof STATE_FILES): string {
    const p = this.path(name);
    let size: number;
    try {
      size = statSync(p).size;
    } catch {
      throw new TunnelError(
        'STATE_MISSING',
        `no ${STATE_FILES[name]} in state directory ${this.dir}; run the join command from \`tunnel-relay cluster create\` first (with --state-dir ${shellQuote(this.dir)} to use this directory), or pass the --state-dir you joined with`,
      );
    }
    if (size > MAX_STATE_BYTES) {
      throw new TunnelError('BAD_INPUT', `${p} is ${size} bytes; at most ${MAX_STATE_BYTES}`);
    }
    protectSecretFile(p, 'agent state file', this.#onModeFixed);
    return readFileSync(p, 'utf8');
  }

  saveKeyAndCredential(privateKeyBase64: string, credential: string): void {
    this.#write('privateKey', `${privateKeyBase64}\n`);
    this.#write('credential', `${credential}\n`);
  }

  readPrivateKey(): string {
    return this.#read('privateKey').trim();
  }

  readCredential(): string {
    return this.#read('credential').trim();
  }

  /** Writes the tunnel's preshared key to preshared.key, then state.json without it. */
  saveState(state: AgentState): void {
    if (state.tunnel) this.#write('presharedKey', `${state.tunnel.presharedKey}\n`);
    this.#write('state', `${JSON.stringify(withoutPresharedKey(state), null, 2)}\n`);
  }

  /** state.json with its preshared key from preshared.key; migrates a state.json of the older layout. */
  readState(): AgentState {
    const stored = this.#readStoredState();
    if (!stored.tunnel) return { ...stored, tunnel: null };
    const { presharedKey: legacyKey, ...tunnel } = stored.tunnel;
    if (typeof legacyKey === 'string') {
      // Older layout: the key sat in state.json. Move it out (saveState writes both files).
      const state: AgentState = { ...stored, tunnel: { ...tunnel, presharedKey: legacyKey } };
      this.saveState(state);
      return state;
    }
    if (!existsSync(this.path('presharedKey'))) {
      throw new TunnelError(
        'STATE_MISSING',
        `no ${STATE_FILES.presharedKey} in state directory ${this.dir} although state.json holds a tunnel; the registration cannot be used: move the directory aside ('mv ${shellQuote(this.dir)} ${shellQuote(`${this.dir}.broken`)}') and run a new join command from the hub operator`,
      );
    }
    return { ...stored, tunnel: { ...tunnel, presharedKey: this.#read('presharedKey').trim() } };
  }

  #readStoredState(): StoredState {
    const text = this.#read('state');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new TunnelError(
        'BAD_INPUT',
        `${this.path('state')} is not valid JSON; run unjoin and join again`,
      );
    }
    const s = parsed as Partial<StoredState> | null;
    if (s?.version !== 1 || typeof s.relay !== 'string' || typeof s.cluster !== 'string') {
      throw new TunnelError(
        'BAD_INPUT',
        `${this.path('state')} is not a tunnel-client state file (version 1)`,
      );
    }
    return { ...(s as StoredState), tunnel: s.tunnel ?? null };
  }

  writeStatus(status: AgentStatusFile): void {
    this.#write('status', `${JSON.stringify(status, null, 2)}\n`);
  }

  /** The running agent's last status, or undefined when none was written. */
  readStatus(): AgentStatusFile | undefined {
    if (!existsSync(this.path('status'))) return undefined;
    try {
      return JSON.parse(this.#read('status')) as AgentStatusFile;
    } catch {
      return undefined;
    }
  }

  /**
   * Takes the one-agent-per-state-dir lock (agent.pid, created exclusively). A lock left by a process
   * that is gone is taken over. Returns the release function.
   */
  lock(pid: number = process.pid): () => void {
    this.ensure();
    const p = this.path('lock');
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(p, `${pid}\n`, { mode: 0o600, flag: 'wx' });
        return () => {
          try {
            if (readFileSync(p, 'utf8').trim() === String(pid)) rmSync(p, { force: true });
          } catch {
            // already gone
          }
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const holder = Number(readFileSync(p, 'utf8').trim());
        if (holder !== pid && processAlive(holder)) {
          throw new TunnelError(
            'CONFLICT',
            `an agent (pid ${holder}) is already running from state directory ${this.dir}; stop it first`,
          );
        }
        rmSync(p, { force: true });
      }
    }
    throw new TunnelError('CONFLICT', `cannot take the agent lock in ${this.dir}`);
  }

  /** Deletes every state file, then the directory if it is left empty. */
  remove(): void {
    for (const name of Object.keys(STATE_FILES) as (keyof typeof STATE_FILES)[]) {
      rmSync(this.path(name), { force: true });
    }
    try {
      rmdirSync(this.dir);
    } catch {
      // Not empty (user files) or already gone: leave it.
    }
  }
}

/** True when a process with this pid exists (EPERM: exists, owned by someone else). */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
