/** The `tunnel-relay serve` of the benchmarks and the demo: loopback, JSON ready line, no UDP or STUN port, warn logs. */

/** The arguments of `tunnel-relay serve` with its data in `dataDir`. */
export function loopbackServeArgs(dataDir: string): string[] {
  return [
    'serve',
    '--output',
    'json',
    '--listen',
    '127.0.0.1:0',
    '--data-dir',
    dataDir,
    '--udp-port',
    'off',
    '--stun-port',
    'off',
    '--log-level',
    'warn',
  ];
}
