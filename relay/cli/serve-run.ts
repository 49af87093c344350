/**
 * What `tunnel-relay serve` does once its flags are parsed (serve.ts): resolve the configuration, start the relay
 * (or a forwarding-only replica), print where it listens, then drain on the first SIGINT/SIGTERM.
 */
import { jsonLogStream, streamPrinter } from '../../shared/kit/cli/output.js';
import { keepAlive, untilSignal } from '../../shared/kit/cli/signals.js';
import { startRelayTier } from '../fleet/tier/tier-start.js';
import { resolveRelayConfig } from '../ops/config/config.js';
import { prettyLogStream } from '../ops/pretty-log.js';
import { type RunningRelay, type StartOptions, startRelay } from '../start/server.js';
import type { ServeFlags } from './serve.js';

/** What serve prints and drains, in either mode. */
type ServedRelay = Pick<RunningRelay, 'url' | 'publicUrl' | 'caPin' | 'plainHttp' | 'adminKey' | 'drain'>;

export async function serve(flags: ServeFlags, startOptions: StartOptions): Promise<void> {
  const { output, config: configFile, ...rest } = flags;
  const config = resolveRelayConfig({
    flags: rest as Record<string, unknown>,
    env: process.env,
    configFile: configFile ?? null,
  });
  const out = streamPrinter();
  const pretty = (config.logFormat ?? (process.stderr.isTTY ? 'pretty' : 'json')) === 'pretty';
  const logStream = pretty ? prettyLogStream(process.stderr) : jsonLogStream(process.stderr);
  const relay: ServedRelay =
    config.mode === 'relay'
      ? await startRelayTier(config, { logStream })
      : await startRelay(config, { logStream, ...startOptions });
  if (output === 'json') {
    out.jsonLine({
      event: 'ready',
      url: relay.url,
      publicUrl: relay.publicUrl,
      caPin: relay.caPin === '' ? undefined : relay.caPin,
      plainHttp: relay.plainHttp ? true : undefined,
      adminKey: relay.adminKey,
    });
  } else {
    out.line(
      `relay listening on ${relay.url}${relay.publicUrl !== relay.url ? ` (public URL ${relay.publicUrl})` : ''}`,
    );
    if (relay.plainHttp) {
      out.line(`plain HTTP: TLS is terminated in front; agents and users reach ${relay.publicUrl}`);
    }
    if (relay.caPin !== '')
      out.line(`CA pin: ${relay.caPin}${relay.plainHttp ? ' (of --public-ca-file)' : ''}`);
    else out.line('CA pin: none (clients verify the public URL against their system trust store)');
    if (relay.adminKey) {
      out.line(`admin access key (shown only now; store it safely): ${relay.adminKey}`);
      // Runnable as printed once tunnel-relay is on PATH (README "Set-up": npm link, or npx inside the clone).
      out.line('next, in another shell:');
      const pin = relay.caPin !== '' ? ` TUNNEL_RELAY_CA_PIN=${relay.caPin}` : '';
      out.line(`  export TUNNEL_RELAY_URL=${relay.publicUrl}${pin} TUNNEL_ACCESS_KEY=${relay.adminKey}`);
      out.line('  tunnel-relay cluster create edge-1');
    }
  }
  const signal = await untilSignal();
  const graceS = config.drainGraceMs / 1000;
  if (output === 'json') out.jsonLine({ event: 'stopping', signal, drainGraceSeconds: graceS });
  else out.line(`${signal}: draining (at most ${graceS} s; a second ${signal} exits at once)`);
  const release = keepAlive();
  // The grace bounds the whole drain: whatever is still open when it ends is abandoned.
  const hardStop = setTimeout(() => {
    process.stderr.write(`drain grace of ${graceS} s over: exiting with connections still open\n`);
    process.exit(0);
  }, config.drainGraceMs);
  await relay.drain(config.drainGraceMs);
  clearTimeout(hardStop);
  release();
  if (output === 'json') out.jsonLine({ event: 'stopped' });
  else out.line('stopped');
}
