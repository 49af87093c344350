/** Waiting for SIGINT / SIGTERM in long-running commands (serve, join, run). */

/** Resolves with the signal's name on the first SIGINT or SIGTERM; a second one exits at once (130). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let seen = false;
    const on = (sig: NodeJS.Signals) => {
      if (seen) process.exit(130);
      seen = true;
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
