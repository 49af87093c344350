/**
 * Long-running commands (serve, join, run). Timers from shared/clock are unref'd, so these commands
 * hold the event loop open explicitly while they wait.
 */

/** Keeps the process alive until the returned function is called. */
export function keepAlive(): () => void {
  const t = setInterval(() => {}, 1 << 30);
  return () => clearInterval(t);
}

/** Resolves with the signal's name on the first SIGINT or SIGTERM; a second one exits at once (130). */
export function untilSignal(): Promise<NodeJS.Signals> {
  const release = keepAlive();
  return new Promise((resolve) => {
    let seen = false;
    const on = (sig: NodeJS.Signals) => {
      if (seen) process.exit(130);
      seen = true;
      release();
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
