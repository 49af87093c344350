/**
 * Whether the relay acts as the calling user on a cluster's default upstream (impersonation, relay/data/proxy/
 * caller-identity.ts): on unless the cluster's values (or, when it sets none, the platform values) say
 * `impersonate: false`.
 */
import { readClusterValues, readPlatformValues } from './values.js';

type ValuesReader = Parameters<typeof readPlatformValues>[0];

/** The values key that turns impersonation off for a cluster (`impersonate: false`). */
export const IMPERSONATE_VALUE = 'impersonate';

/** Whether values turn impersonation on (anything but an explicit `false` keeps it on). */
export function impersonationOn(own: Record<string, unknown>, platform: Record<string, unknown>): boolean {
  const v = Object.hasOwn(own, IMPERSONATE_VALUE) ? own[IMPERSONATE_VALUE] : platform[IMPERSONATE_VALUE];
  return v !== false;
}

/** Whether the relay impersonates callers on cluster `name` (its merged values). */
export async function clusterImpersonates(ctx: ValuesReader, name: string): Promise<boolean> {
  const [own, platform] = await Promise.all([readClusterValues(ctx, name), readPlatformValues(ctx)]);
  return impersonationOn(own ?? {}, platform);
}
