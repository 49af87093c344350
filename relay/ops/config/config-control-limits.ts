/**
 * The caps on what API callers can make a hub store and write (docs/LIMITS.md "Control plane"):
 *   max-pending-registrations  Pending clusters that bootstrap-key registrations created, in all (default 1000)
 *   max-pending-per-key        the same, per bootstrap key (default 250)
 *   write-budget               mutating API calls per minute per access key (default 240; relay/control/model/write-budget.ts)
 *   audit-max-rows             audit rows kept before old ones are pruned (default 100000)
 *   audit-retention            audit rows younger than this are never pruned (default 30d, 1h-366d)
 */

import { TunnelError } from '../../../shared/errors.js';
import { parseDuration } from '../../../shared/kit/duration.js';
import type { Sourced } from './config-store.js';

export interface ControlLimits {
  maxPendingRegistrations: number;
  maxPendingPerKey: number;
  writeBudgetPerMinute: number;
  auditMaxRows: number;
  auditRetentionMs: number;
}

interface WholeSetting {
  key: string;
  min: number;
  max: number;
  default: number;
}

export const MAX_PENDING_REGISTRATIONS: WholeSetting = {
  key: 'max-pending-registrations',
  min: 1,
  max: 100_000,
  default: 1_000,
};
export const MAX_PENDING_PER_KEY: WholeSetting = {
  key: 'max-pending-per-key',
  min: 1,
  max: 100_000,
  default: 250,
};
export const WRITE_BUDGET: WholeSetting = { key: 'write-budget', min: 1, max: 1_000_000, default: 240 };
export const AUDIT_MAX_ROWS: WholeSetting = {
  key: 'audit-max-rows',
  min: 1_000,
  max: 100_000_000,
  default: 100_000,
};
export const AUDIT_RETENTION = { key: 'audit-retention', minMs: 3_600_000, default: '30d' } as const;

export interface ControlLimitSettings {
  maxPendingRegistrations: Sourced;
  maxPendingPerKey: Sourced;
  writeBudget: Sourced;
  auditMaxRows: Sourced;
  auditRetention: Sourced;
}

function bad(key: string, source: string, reason: string): never {
  throw new TunnelError('BAD_CONFIG', `${key} (${source}): ${reason}`);
}

function whole(v: Sourced, s: WholeSetting): number {
  if (!v) return s.default;
  const [value, source] = v;
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,9}$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isInteger(n) || n < s.min || n > s.max) {
    bad(s.key, source, `expected a whole number ${s.min}-${s.max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function retentionMs(v: Sourced): number {
  if (!v) return parseDuration(AUDIT_RETENTION.default);
  const [value, source] = v;
  const expected = `expected a duration from 1h to 366d like 30d or 90d, got ${JSON.stringify(value)}`;
  if (typeof value !== 'string') bad(AUDIT_RETENTION.key, source, expected);
  let ms: number;
  try {
    ms = parseDuration(value, AUDIT_RETENTION.key);
  } catch {
    bad(AUDIT_RETENTION.key, source, expected);
  }
  if (ms < AUDIT_RETENTION.minMs) bad(AUDIT_RETENTION.key, source, expected);
  return ms;
}

export function parseControlLimits(s: ControlLimitSettings): ControlLimits {
  return {
    maxPendingRegistrations: whole(s.maxPendingRegistrations, MAX_PENDING_REGISTRATIONS),
    maxPendingPerKey: whole(s.maxPendingPerKey, MAX_PENDING_PER_KEY),
    writeBudgetPerMinute: whole(s.writeBudget, WRITE_BUDGET),
    auditMaxRows: whole(s.auditMaxRows, AUDIT_MAX_ROWS),
    auditRetentionMs: retentionMs(s.auditRetention),
  };
}
