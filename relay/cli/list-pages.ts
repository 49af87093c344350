/**
 * How the list commands (`cluster list`, `token list`, `audit`) read the relay's paged lists (docs/API.md
 * "Lists"): with `--limit N`, one page of at most N (starting at `--continue TOKEN` when given) whose `continue`
 * is printed so the next page can be asked for; without it, every page in turn (`followPage` items each, sized so
 * a page fits the 4 MiB a response may have) until the relay gives no `continue`.
 */
import { Option } from 'commander';
import { TunnelError } from '../../shared/errors.js';
import { shown } from '../../shared/kit/cli/parsers.js';
import type { RelayClient } from '../../shared/kit/http/client.js';

export interface PageFlags {
  limit?: number;
  continue?: string;
}

export interface Listed<T> {
  items: T[];
  /** Present when more remain after the page(s) read. */
  continue?: string;
}

/** Pages followed at most (a relay that kept answering `continue` would otherwise be read forever). */
const MAX_PAGES = 100_000;

function parseLimit(max: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^\d{1,4}$/.test(v) || n < 1 || n > max) {
      throw new TunnelError('BAD_INPUT', `--limit ${shown(v)} is not valid: expected 1-${max}`);
    }
    return n;
  };
}

function parseContinue(v: string): string {
  if (!/^[A-Za-z0-9_-]{1,512}$/.test(v)) {
    throw new TunnelError(
      'BAD_INPUT',
      `--continue ${shown(v)} is not valid: pass the token a previous page printed (letters, digits, - and _)`,
    );
  }
  return v;
}

/** `--limit N` (1-`max`) and `--continue TOKEN`; `defaultLimit` makes one page the default (audit). */
export function pageOptions(what: string, max: number, defaultLimit?: number): Option[] {
  const limit = new Option(
    '--limit <n>',
    defaultLimit === undefined
      ? `print one page of at most N ${what} (1-${max}) and the token for the next (default: every ${what.replace(/s$/, '')})`
      : `how many ${what}, 1-${max}`,
  ).argParser(parseLimit(max));
  if (defaultLimit !== undefined) limit.default(defaultLimit);
  return [
    limit,
    new Option('--continue <token>', 'start at this page (the token the previous page printed)').argParser(
      parseContinue,
    ),
  ];
}

function pageUrl(path: string, limit: number, token: string | undefined): string {
  const sep = path.includes('?') ? '&' : '?';
  return `${path}${sep}limit=${limit}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
}

/** One page (`flags.limit`) or every page from `flags.continue` on, `followPage` at a time. */
export async function readPages<T>(
  client: RelayClient,
  path: string,
  flags: PageFlags & { all?: boolean },
  followPage: number,
): Promise<Listed<T>> {
  if (flags.limit !== undefined && !flags.all) {
    return client.json<Listed<T>>('GET', pageUrl(path, flags.limit, flags.continue));
  }
  const items: T[] = [];
  let token = flags.continue;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await client.json<Listed<T>>('GET', pageUrl(path, followPage, token));
    items.push(...page.items);
    if (page.continue === undefined) return { items };
    token = page.continue;
  }
  throw new TunnelError('RELAY_BAD_RESPONSE', `${path}: the relay was still paging after ${MAX_PAGES} pages`);
}

/** The note that tells how to read the next page, when one remains. */
export function nextPageNote(
  command: string,
  listed: Listed<unknown>,
  limit: number | undefined,
): string | null {
  if (listed.continue === undefined) return null;
  const limitFlag = limit === undefined ? '' : ` --limit ${limit}`;
  return `more remain: ${command}${limitFlag} --continue ${listed.continue}`;
}
