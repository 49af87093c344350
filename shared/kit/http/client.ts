/**
 * A small JSON/YAML client for the relay API over a pinned dispatcher. Every call has a deadline,
 * response bodies are capped before they are buffered, and failures become TunnelErrors:
 *   - the relay's `{ error: { code, message } }` body  -> that code and message;
 *   - refused / reset / DNS failures                    -> RELAY_UNREACHABLE naming the URL;
 *   - a certificate the trust does not accept           -> RELAY_CERT_UNTRUSTED naming --ca-pin / --ca-file;
 *   - a pin mismatch                                    -> CA_PIN_MISMATCH (from the connector);
 *   - the deadline                                      -> TIMEOUT;
 *   - anything else unexpected                          -> RELAY_BAD_RESPONSE with the status.
 * Tokens travel only in the Authorization header and never appear in an error message.
 */
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import { ERROR_CODES, type ErrorCode, isTunnelError, TunnelError } from '../../errors.js';
import { type ConnectVia, createRelayDispatcher, type Trust } from './dispatcher.js';

/** Largest response body the client buffers (kubeconfigs and cluster lists are far smaller). */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 15_000;

export interface RelayClientOptions {
  /** https://host:port of the relay; a path prefix is kept. */
  readonly baseUrl: string;
  readonly trust: Trust;
  /** Default bearer token for every call (an access key or agent credential). */
  readonly token?: string;
  /** Whole-call deadline, connect included. Default 15 s. */
  readonly timeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly connectVia?: ConnectVia;
  /** Use this dispatcher instead of creating one (it is then not closed by close()). */
  readonly dispatcher?: Dispatcher;
}

export interface CallOptions {
  readonly body?: unknown;
  /** Overrides the client's token for this call; `null` sends none. */
  readonly token?: string | null;
  readonly timeoutMs?: number;
  readonly accept?: string;
}

export interface RawResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
]);

export class RelayClient {
  readonly baseUrl: string;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;

  constructor(opts: RelayClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#ownsDispatcher = !opts.dispatcher;
    this.#dispatcher =
      opts.dispatcher ??
      createRelayDispatcher({
        trust: opts.trust,
        connectTimeoutMs: opts.connectTimeoutMs,
        connectVia: opts.connectVia,
      });
  }

  /** Calls a JSON route and returns the parsed body; non-2xx answers throw. */
  async json<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
    const res = await this.raw(method, path, { accept: 'application/json', ...opts });
    if (res.status >= 300) throw errorFromResponse(method, path, res);
    if (res.body.length === 0) return undefined as T;
    try {
      return JSON.parse(res.body) as T;
    } catch {
      throw new TunnelError(
        'RELAY_BAD_RESPONSE',
        `relay answered ${method} ${path} with HTTP ${res.status} but the body is not JSON`,
      );
    }
  }

  /** Calls a route that answers text (YAML); non-2xx answers throw. */
  async text(method: string, path: string, opts: CallOptions = {}): Promise<string> {
    const res = await this.raw(method, path, opts);
    if (res.status >= 300) throw errorFromResponse(method, path, res);
    return res.body;
  }

  /** One request, whatever the status. Network, TLS, pin and deadline failures throw. */
  async raw(method: string, path: string, opts: CallOptions = {}): Promise<RawResponse> {
    const url = this.baseUrl + path;
    const token = opts.token === undefined ? this.#token : opts.token;
    const headers: Record<string, string> = { accept: opts.accept ?? '*/*' };
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const timeoutMs = opts.timeoutMs ?? this.#timeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher: this.#dispatcher,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const text = await readCapped(res.body, MAX_RESPONSE_BYTES, `${method} ${path}`);
      const ct = res.headers['content-type'];
      return {
        status: res.statusCode,
        contentType: Array.isArray(ct) ? (ct[0] ?? '') : (ct ?? ''),
        body: text,
      };
    } catch (err) {
      throw translateError(err, method, this.baseUrl, path, timeoutMs, signal);
    }
  }

  /**
   * Opens a long-lived GET answered as a stream (text/event-stream): resolves once the headers arrived within
   * the client's deadline, with the body's chunks; a body silent for `idleTimeoutMs` fails with TIMEOUT. A
   * non-2xx answer throws as json() does. Aborting `signal` ends the stream.
   */
  async stream(
    path: string,
    opts: { signal: AbortSignal; idleTimeoutMs: number },
  ): Promise<AsyncIterable<Buffer>> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    try {
      const res = await request(this.baseUrl + path, {
        method: 'GET',
        headers,
        dispatcher: this.#dispatcher,
        signal: opts.signal,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: opts.idleTimeoutMs,
      });
      if (res.statusCode >= 300) {
        const body = await readCapped(res.body, MAX_RESPONSE_BYTES, `GET ${path}`);
        throw errorFromResponse('GET', path, { status: res.statusCode, contentType: '', body });
      }
      return bodyChunks(res.body, path, this.baseUrl, opts.idleTimeoutMs);
    } catch (err) {
      throw translateError(err, 'GET', this.baseUrl, path, this.#timeoutMs, opts.signal);
    }
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }
}

/** The body's chunks; a silent body (undici's body timeout) becomes TIMEOUT, a cut one RELAY_UNREACHABLE. */
async function* bodyChunks(
  body: AsyncIterable<Buffer>,
  path: string,
  base: string,
  idleTimeoutMs: number,
): AsyncIterable<Buffer> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'UND_ERR_BODY_TIMEOUT') {
      throw new TunnelError('TIMEOUT', `GET ${base}${path}: nothing received for ${idleTimeoutMs} ms`);
    }
    const msg = err instanceof Error ? err.message : String(err);
    throw new TunnelError('RELAY_UNREACHABLE', `GET ${base}${path}: the stream broke (${msg})`, {
      cause: err,
    });
  }
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, cap: number, what: string) {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > cap) {
      body.destroy();
      throw new TunnelError('RELAY_BAD_RESPONSE', `relay answer to ${what} is over ${cap} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/** OpenSSL's and Node's codes of a certificate the client's trust refused (CERT_HAS_EXPIRED, UNABLE_TO_VERIFY_...). */
function isCertificateCode(code: string): boolean {
  return (
    code.includes('CERT') ||
    code.startsWith('ERR_TLS') ||
    code.includes('SELF_SIGNED') ||
    code.startsWith('UNABLE_TO_')
  );
}

function causeCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || isCertificateCode(code))) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function findTunnelError(err: unknown): TunnelError | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if (isTunnelError(e)) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function translateError(
  err: unknown,
  method: string,
  base: string,
  path: string,
  timeoutMs: number,
  signal: AbortSignal,
): TunnelError {
  const te = findTunnelError(err);
  if (te) return te;
  if (signal.aborted || (err as { name?: string })?.name === 'TimeoutError') {
    return new TunnelError('TIMEOUT', `${method} ${base}${path} did not answer within ${timeoutMs} ms`);
  }
  const code = causeCode(err);
  if (code && isCertificateCode(code)) {
    return new TunnelError(
      'RELAY_CERT_UNTRUSTED',
      `the relay at ${base} presented a certificate that is not trusted (${code}); pass --ca-pin sha256:... as printed by the relay, or --ca-file`,
      { cause: err },
    );
  }
  if (code) {
    return new TunnelError('RELAY_UNREACHABLE', `cannot reach the relay at ${base} (${code})`, {
      cause: err,
    });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return new TunnelError('RELAY_UNREACHABLE', `request ${method} ${base}${path} failed: ${msg}`, {
    cause: err,
  });
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown };
}

/** The TunnelError a non-2xx relay answer stands for. */
export function errorFromResponse(method: string, path: string, res: RawResponse): TunnelError {
  let parsed: ErrorBody | undefined;
  try {
    parsed = JSON.parse(res.body) as ErrorBody;
  } catch {
    parsed = undefined;
  }
  const code = parsed?.error?.code;
  const message = parsed?.error?.message;
  if (typeof code === 'string' && Object.hasOwn(ERROR_CODES, code)) {
    return new TunnelError(code as ErrorCode, typeof message === 'string' ? message : code);
  }
  const detail = typeof message === 'string' ? `: ${message.slice(0, 200)}` : '';
  return new TunnelError(
    'RELAY_BAD_RESPONSE',
    `relay answered ${method} ${path} with HTTP ${res.status}${detail}`,
  );
}
