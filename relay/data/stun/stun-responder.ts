/**
 * The relay's STUN responder (`--stun-port`, default 3478): answers Binding requests on UDP with the address and
 * port it saw them from, so an agent (`tunnel-client egress --check`) or any STUN client learns its public UDP
 * mapping and that UDP reaches the relay. Stateless: no map keyed by sender. It shares the relay's event loop,
 * so answers are capped per second across all senders (STUN_MAX_ANSWERS_PER_SECOND: ~5-10 % of a core,
 * bench/stun-bench.ts); a response is at most 24 bytes longer than its request, so the responder is no useful
 * amplifier. Everything that is not a plain Binding request is dropped and counted by reason
 * (shared/net/stun/stun-codec.ts).
 */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Clock } from '../../../shared/clock.js';
import { TunnelError } from '../../../shared/errors.js';
import { ipToFamilyBytes } from '../../../shared/net/ip/ip-bytes.js';
import {
  encodeBindingSuccess,
  parseStunRequest,
  type StunAddress,
  type StunIgnoreReason,
} from '../../../shared/net/stun/stun-codec.js';
import { bindHint } from '../../ops/port-hold.js';

/**
 * Answers per second across all senders; requests over it are dropped as `rate`. ~16 us of CPU per answer
 * (bench/stun-bench.ts), so the cap holds the responder near 8 % of a core; 10,000 agents probing every 30 s
 * need ~330/s.
 */
export const STUN_MAX_ANSWERS_PER_SECOND = 5_000;

export interface StunStats {
  requests: number;
  answered: number;
  dropped: Record<StunIgnoreReason | 'rate' | 'send-error', number>;
}

export interface StunResponder {
  /** The bound UDP port (useful with port 0). */
  readonly port: number;
  readonly stats: StunStats;
  close(): Promise<void>;
}

export interface StunResponderOptions {
  host: string;
  port: number;
  clock: Clock;
  maxAnswersPerSecond?: number;
}

export function startStunResponder(opts: StunResponderOptions): Promise<StunResponder> {
  const max = opts.maxAnswersPerSecond ?? STUN_MAX_ANSWERS_PER_SECOND;
  const stats: StunStats = {
    requests: 0,
    answered: 0,
    dropped: {
      short: 0,
      'too-long': 0,
      'not-stun': 0,
      'not-binding-request': 0,
      attribute: 0,
      fingerprint: 0,
      'change-request': 0,
      rate: 0,
      'send-error': 0,
    },
  };
  const sock = dgram.createSocket({ type: isIPv6(opts.host) ? 'udp6' : 'udp4' });
  let windowStart = Number.NEGATIVE_INFINITY;
  let inWindow = 0;
  sock.on('message', (msg, rinfo) => {
    stats.requests++;
    const req = parseStunRequest(msg);
    if (req.kind === 'ignore') {
      stats.dropped[req.reason]++;
      return;
    }
    const now = opts.clock.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      inWindow = 0;
    }
    if (inWindow >= max) {
      stats.dropped.rate++;
      return;
    }
    inWindow++;
    const address = ipToFamilyBytes(rinfo.address);
    if (!address) {
      stats.dropped['send-error']++;
      return;
    }
    const from: StunAddress = { address, port: rinfo.port };
    sock.send(encodeBindingSuccess(req, from), rinfo.port, rinfo.address, (err) => {
      if (err) stats.dropped['send-error']++;
      else stats.answered++;
    });
  });
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      sock.close();
      reject(
        new TunnelError(
          'BAD_CONFIG',
          `stun-port: cannot bind udp ${opts.host}:${opts.port} (${err.code ?? 'error'})${bindHint(err.code ?? '', '--stun-port (or --stun-port off)')}`,
        ),
      );
    };
    sock.once('error', onError);
    sock.bind({ address: opts.host, port: opts.port }, () => {
      sock.off('error', onError);
      // Late socket errors (ICMP-driven on some systems) must not crash the relay.
      sock.on('error', () => {
        stats.dropped['send-error']++;
      });
      let closed: Promise<void> | null = null;
      resolve({
        port: sock.address().port,
        stats,
        close() {
          closed ??= new Promise<void>((r) => sock.close(() => r()));
          return closed;
        },
      });
    });
  });
}
