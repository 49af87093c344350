/** Turns the CLIs' `--ca-pin` / `--ca-file` flags into a dispatcher Trust. */
import { readFileSync } from 'node:fs';
import { TunnelError } from '../../errors.js';
import { parseCaPin } from '../../tls-pin.js';
import type { Trust } from './dispatcher.js';

export interface TrustFlags {
  readonly caPin?: string | undefined;
  readonly caFile?: string | undefined;
}

export function trustFromFlags(flags: TrustFlags): Trust {
  if (flags.caPin && flags.caFile) {
    throw new TunnelError('BAD_INPUT', 'give either --ca-pin or --ca-file, not both');
  }
  if (flags.caPin) return { kind: 'pin', pin: parseCaPin(flags.caPin) };
  if (flags.caFile) {
    let ca: string;
    try {
      ca = readFileSync(flags.caFile, 'utf8');
    } catch (err) {
      const code = (err as { code?: string }).code ?? 'unreadable';
      throw new TunnelError('BAD_INPUT', `--ca-file '${flags.caFile}' cannot be read (${code})`);
    }
    if (!ca.includes('-----BEGIN CERTIFICATE-----')) {
      throw new TunnelError('BAD_INPUT', `--ca-file '${flags.caFile}' holds no PEM certificate`);
    }
    return { kind: 'ca', ca };
  }
  return { kind: 'system' };
}
