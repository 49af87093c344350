/**
 * `cluster create` of a name that exists: the relay answers CONFLICT; the command adds what to run instead. Someone
 * re-running `cluster create NAME --print-install-command | sh` after a failed install (the link is spent by then)
 * needs a new link for the same cluster, which `rotate-psk` gives, in the same `| sh` form.
 */
import { TunnelError } from '../../shared/errors.js';

export function withClusterExistsHint(err: unknown, name: string, installOnly: boolean): unknown {
  if (!(err instanceof TunnelError) || err.code !== 'CONFLICT' || !err.message.includes('already exists'))
    return err;
  const fix = installOnly
    ? `for a new install command (the old link and PSK stop working) run 'tunnel-relay cluster rotate-psk ${name} --print-install-command | sh'`
    : `for a new join command (the old PSK stops working) run 'tunnel-relay cluster rotate-psk ${name}'`;
  return new TunnelError('CONFLICT', `${err.message}; ${fix}`, { cause: err });
}
