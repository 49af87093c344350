/**
 * The rule both CLIs follow: a flag on the command line beats the environment. Commander already applies it to
 * one option and its own variable (`--server` over TUNNEL_RELAY_URL); this applies it across options that exclude
 * each other, such as `--ca-pin` / `--ca-file`: when one of a group was given as a flag, the others that came only
 * from the environment are dropped, so `--ca-file F` with TUNNEL_RELAY_CA_PIN set uses F.
 */
import type { Command } from 'commander';

/** `groups` hold attribute names (caPin, caFile); call before the action reads the options. */
export function flagsBeatEnvironment(cmd: Command, groups: readonly (readonly string[])[]): Command {
  return cmd.hook('preAction', (_self, action) => {
    for (const group of groups) {
      if (!group.some((key) => action.getOptionValueSource(key) === 'cli')) continue;
      for (const key of group) {
        if (action.getOptionValueSource(key) === 'env')
          action.setOptionValueWithSource(key, undefined, 'default');
      }
    }
  });
}
