/** DNS-1123 labels: cluster and group names. */
import { TunnelError } from '../../../shared/errors.js';

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isDns1123Label(name: unknown): name is string {
  return typeof name === 'string' && LABEL.test(name);
}

/** Throws INVALID_NAME naming `what` unless `name` is a DNS-1123 label. */
export function checkName(name: unknown, what: string): string {
  if (!isDns1123Label(name)) {
    const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : typeof name;
    throw new TunnelError(
      'INVALID_NAME',
      `${what} ${shown} is not a DNS-1123 label: 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit`,
    );
  }
  return name;
}
