/**
 * Global cleanup registry for integration tests. Everything a test creates on the host (network
 * namespaces, host-side links, processes, files) is registered here and torn down:
 * - by `cleanupAll()` (call it from afterAll / afterEach),
 * - synchronously on process exit, and on SIGINT / SIGTERM / SIGHUP (then the signal is re-raised),
 * so a crashed or interrupted test run leaves nothing behind.
 * Entries run last-registered first. Each entry has an async form and a sync form (for exit).
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';

export interface CleanupEntry {
  readonly label: string;
  readonly async: () => Promise<void>;
  readonly sync: () => void;
}

const entries = new Map<number, CleanupEntry>();
let nextId = 1;
let hooked = false;

function hookProcess(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => cleanupAllSync());
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      cleanupAllSync();
      process.removeListener(sig, handler);
      process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

/** Registers an entry; returns a function that removes it without running it. */
export function registerCleanup(entry: CleanupEntry): () => void {
  hookProcess();
  const id = nextId++;
  entries.set(id, entry);
  return () => {
    entries.delete(id);
  };
}

/** Number of pending entries (the harness self-test checks it returns to 0). */
export function pendingCleanups(): number {
  return entries.size;
}

/** A mark for cleanupSince(): entries registered after this call have ids at or above it. */
export function cleanupMark(): number {
  return nextId;
}

/** Runs every pending entry, newest first; errors are collected and thrown together at the end. */
export async function cleanupAll(): Promise<void> {
  await cleanupSince(0);
}

/**
 * Runs the pending entries registered since `mark` (cleanupMark()), newest first, leaving older ones in place;
 * errors are collected and thrown together at the end.
 */
export async function cleanupSince(mark: number): Promise<void> {
  const ids = [...entries.keys()].filter((id) => id >= mark).sort((a, b) => b - a);
  const errors: string[] = [];
  for (const id of ids) {
    const e = entries.get(id);
    entries.delete(id);
    if (!e) continue;
    try {
      await e.async();
    } catch (err) {
      errors.push(`${e.label}: ${(err as Error).message}`);
    }
  }
  if (errors.length) throw new Error(`cleanup failed:\n${errors.join('\n')}`);
}

export function cleanupAllSync(): void {
  const ids = [...entries.keys()].sort((a, b) => b - a);
  for (const id of ids) {
    const e = entries.get(id);
    entries.delete(id);
    try {
      e?.sync();
    } catch {
      // best effort on exit
    }
  }
}

/**
 * SIGKILLs the process group led by `pid` (our children are spawned detached, so each leads its
 * own group), ignoring "no such process". Only the group is signalled, never the bare pid, so a
 * pid reused by an unrelated process after ours was reaped is never hit.
 */
export function killGroupSync(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export function runQuietSync(cmd: string, args: readonly string[]): void {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
  } catch {
    // best effort
  }
}

/** Registers a temporary path to delete recursively. */
export function registerTempPath(path: string): () => void {
  return registerCleanup({
    label: `rm ${path}`,
    async: async () => rmSync(path, { recursive: true, force: true }),
    sync: () => rmSync(path, { recursive: true, force: true }),
  });
}
