/**
 * `egress --check`: tries each destination the way the agent would and says ok or failed with the reason.
 *   registration, values, lease  GET /healthz on the relay over a fresh connection of the agent's relay
 *                                client: same proxy (connectVia), same trust (the CA pin is checked on the
 *                                TLS session, inside the proxy tunnel);
 *   relay (DERP)                 a WebSocket upgrade at /derp (subprotocol derp) through the agent's
 *                                WebSocket proxy agent, pin checked on the upgrade; closed once open;
 *   STUN                         one STUN Binding request (RFC 5389), answered within the deadline; the
 *                                answer's mapped address (this host's public UDP mapping) is reported;
 *   direct WireGuard             not probed: only a handshake with the agent's key would show it, and that
 *                                would replace a running agent's session; the line has no `check`.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import type { TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import { isTunnelError, TunnelError } from '../../shared/errors.js';
import { RelayClient } from '../../shared/kit/http/client.js';
import type { Trust } from '../../shared/kit/http/dispatcher.js';
import type { ProxySettings } from '../../shared/kit/proxy/proxy-config.js';
import { relayConnectVia, wsAgentFor } from '../../shared/kit/proxy/transports.js';
import {
  decodeMappedAddress,
  encodeBindingRequest,
  formatStunAddress,
} from '../../shared/net/stun/stun-codec.js';
import { checkPin } from '../../shared/tls-pin.js';
import type { Destination } from './destinations.js';

export const CHECK_TIMEOUT_MS = 10_000;
export const STUN_TIMEOUT_MS = 3_000;

export interface CheckResult {
  readonly check: 'ok' | 'failed';
  readonly reason?: string;
  /** STUN: the address and port the server saw this host's request come from (`host:port`). */
  readonly mapped?: string;
}

export interface CheckOptions {
  readonly trust: Trust;
  readonly proxy: ProxySettings;
  readonly timeoutMs?: number;
  readonly stunTimeoutMs?: number;
}

export function reasonOf(err: unknown): string {
  if (isTunnelError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

async function checkHttps(d: Destination, o: CheckOptions): Promise<CheckResult> {
  const url = new URL(d.url ?? '');
  const connectVia = relayConnectVia(o.proxy, url.protocol);
  const client = new RelayClient({
    baseUrl: url.origin,
    trust: o.trust,
    timeoutMs: o.timeoutMs ?? CHECK_TIMEOUT_MS,
    connectVia,
  });
  try {
    const res = await client.raw('GET', '/healthz', { token: null });
    if (res.status >= 500)
      return {
        check: 'failed',
        reason: `the relay answered HTTP ${res.status} (it is up but failing; its log says why)`,
      };
    return { check: 'ok' };
  } catch (err) {
    return { check: 'failed', reason: reasonOf(err) };
  } finally {
    await client.close();
  }
}

function checkDerp(d: Destination, o: CheckOptions): Promise<CheckResult> {
  const url = d.url ?? '';
  const pin = o.trust.kind === 'pin' ? o.trust.pin : undefined;
  const agent = wsAgentFor(o.proxy, url);
  return new Promise((resolve) => {
    let error: unknown;
    let opened = false;
    const ws = new WebSocket(url, 'derp', {
      agent,
      ca: o.trust.kind === 'ca' ? o.trust.ca : undefined,
      rejectUnauthorized: o.trust.kind !== 'pin',
      handshakeTimeout: o.timeoutMs ?? CHECK_TIMEOUT_MS,
      perMessageDeflate: false,
    });
    ws.on('upgrade', (res) => {
      if (!pin) return;
      try {
        checkPin(pin, (res.socket as TLSSocket).getPeerCertificate?.()?.raw, `relay ${d.host}:${d.port}`);
      } catch (err) {
        error = err;
        ws.terminate();
      }
    });
    ws.on('open', () => {
      opened = true;
      ws.terminate();
    });
    ws.on('error', (err) => {
      error ??= err;
    });
    ws.on('close', () => {
      if (opened && error === undefined) resolve({ check: 'ok' });
      else resolve({ check: 'failed', reason: reasonOf(error ?? new Error('closed before the upgrade')) });
    });
  });
}

function checkStun(d: Destination, o: CheckOptions): Promise<CheckResult> {
  const ms = o.stunTimeoutMs ?? STUN_TIMEOUT_MS;
  const txid = randomBytes(12);
  const req = encodeBindingRequest(txid);
  const sock = createSocket(d.host.includes(':') ? 'udp6' : 'udp4');
  return new Promise((resolve) => {
    const done = (r: CheckResult) => {
      clearTimeout(timer);
      clearInterval(resend);
      sock.close();
      resolve(r);
    };
    const timer = setTimeout(
      () =>
        done({
          check: 'failed',
          reason: `no STUN answer came within ${ms} ms (UDP to it is blocked, or nothing answers there)`,
        }),
      ms,
    );
    const send = () => sock.send(req, d.port, d.host, () => {});
    const resend = setInterval(send, Math.max(250, ms / 4));
    sock.on('message', (msg) => {
      // A Binding success (0x0101) or error (0x0111) response carrying our transaction id.
      if (msg.length >= 20 && (msg.readUInt16BE(0) & 0xffef) === 0x0101 && msg.subarray(8, 20).equals(txid)) {
        const mapped = decodeMappedAddress(msg);
        done(mapped ? { check: 'ok', mapped: formatStunAddress(mapped) } : { check: 'ok' });
      }
    });
    sock.on('error', (err) => done({ check: 'failed', reason: reasonOf(err) }));
    send();
  });
}

/** A failure as one full sentence naming the destination: `Cannot use HOST:PORT (tcp) for lease: WHY.` */
export function failureSentence(d: Destination, why: string): string {
  const host = d.host.includes(':') ? `[${d.host}]` : d.host;
  return `Cannot use ${host}:${d.port} (${d.protocol}) for ${d.purpose}: ${why.trim().replace(/[.\s]+$/, '')}.`;
}

/** Runs the check for one destination (undefined: not probed); a failure's reason is a full sentence. */
export async function checkDestination(d: Destination, o: CheckOptions): Promise<CheckResult | undefined> {
  const r = await probe(d, o);
  if (r === undefined || r.check === 'ok' || r.reason === undefined) return r;
  return { ...r, reason: failureSentence(d, r.reason) };
}

/** Never throws. */
async function probe(d: Destination, o: CheckOptions): Promise<CheckResult | undefined> {
  try {
    switch (d.purpose) {
      case 'registration':
      case 'values':
      case 'lease':
        return await checkHttps(d, o);
      case 'relay (DERP)':
        return await checkDerp(d, o);
      case 'STUN':
        return await checkStun(d, o);
      default:
        return undefined;
    }
  } catch (err) {
    return {
      check: 'failed',
      reason: reasonOf(err instanceof Error ? err : new TunnelError('INTERNAL', String(err))),
    };
  }
}
