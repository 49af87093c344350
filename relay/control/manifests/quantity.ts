/**
 * Kubernetes resource quantities as the seeds' `--resource-limits` / `--resource-requests` take them
 * (`cpu=800m`, `memory=800Mi`): a non-negative decimal number and an optional suffix, binary (Ki Mi Gi
 * Ti Pi Ei) or decimal (m k M G T P E). Exponent forms (`1e3`) are not accepted. A bad value is BAD_INPUT
 * naming the flag and the value; the value is kept as written, so the manifest says what the user said.
 */

import { TunnelError } from '../../../shared/errors.js';
import { shown } from '../../../shared/kit/cli/parsers.js';

const QUANTITY = /^(\d{1,18}(?:\.\d{1,9})?|\.\d{1,9})(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/;

const FACTOR: Readonly<Record<string, number>> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

export interface Quantity {
  /** As written, e.g. `800Mi`. */
  readonly text: string;
  /** Its value in base units (cores, bytes), for comparing a request with its limit. */
  readonly value: number;
}

export function parseQuantity(text: string, what: string): Quantity {
  const m = QUANTITY.exec(text);
  if (!m) {
    throw new TunnelError(
      'BAD_INPUT',
      `${what} ${shown(text)} is not a Kubernetes quantity: expected a number with an optional suffix, e.g. 400m, 1, 512Mi, 2Gi`,
    );
  }
  const value = Number(m[1]) * (FACTOR[m[2] ?? ''] ?? 1);
  if (value <= 0) throw new TunnelError('BAD_INPUT', `${what} ${shown(text)} must be greater than zero`);
  return { text, value };
}
