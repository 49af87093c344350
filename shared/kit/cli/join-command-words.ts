/**
 * The printed join command (`TUNNEL_CLIENT_PSK=<psk> tunnel-client join --relay ... --cluster ... [--ca-pin ...]`)
 * back into the words after `tunnel-client`, with the PSK as `--psk <psk>`: for programs that start the agent from a
 * join command the relay returned (demo, benchmarks, tests). Words are split on spaces: the relay quotes none of the
 * words it writes except an `--upstream` that needs it, which this does not take.
 */
const PSK_PREFIX = 'TUNNEL_CLIENT_PSK=';

export function joinCommandWords(command: string): string[] {
  const words = command.split(' ');
  const [assignment, program, ...rest] = words;
  if (assignment === undefined || !assignment.startsWith(PSK_PREFIX) || program !== 'tunnel-client') {
    throw new Error(`not a join command: ${command.slice(0, 40)}...`);
  }
  if (rest.some((w) => w.startsWith("'"))) throw new Error('a quoted word in the join command');
  return [...rest, '--psk', assignment.slice(PSK_PREFIX.length)];
}
