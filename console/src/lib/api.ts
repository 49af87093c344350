/**
 * The relay's public API from the browser: same origin, `Authorization: Bearer <key>` on every call (no
 * cookies, so no cross-site request can carry the key), JSON bodies, the error envelope turned into ApiError.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Api {
  readonly key: string;
  get<T>(path: string): Promise<T>;
  text(path: string): Promise<string>;
  send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T>;
  /** A raw request (the events feed reads the body as a stream). */
  raw(path: string, init: { signal: AbortSignal; accept: string }): Promise<Response>;
}

/** How long one API call may take before it is abandoned. */
const CALL_TIMEOUT_MS = 15_000;

async function failure(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.code)
      return new ApiError(res.status, body.error.code, body.error.message ?? body.error.code);
  } catch {
    // not the envelope
  }
  return new ApiError(res.status, `HTTP_${res.status}`, `the relay answered ${res.status} ${res.statusText}`);
}

export function makeApi(key: string, onUnauthenticated: () => void): Api {
  const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, ...extra });
  async function call(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(path, { ...init, cache: 'no-store', signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    } catch (err) {
      throw new ApiError(0, 'UNREACHABLE', `the relay did not answer (${(err as Error).message})`);
    }
    if (res.status === 401) onUnauthenticated();
    if (!res.ok) throw await failure(res);
    return res;
  }
  return {
    key,
    async get<T>(path: string): Promise<T> {
      return (await (await call(path, { headers: headers({ accept: 'application/json' }) })).json()) as T;
    },
    async text(path: string): Promise<string> {
      return (await call(path, { headers: headers() })).text();
    },
    async send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
      const init: RequestInit = { method, headers: headers({ accept: 'application/json' }) };
      if (body !== undefined) {
        init.body = JSON.stringify(body);
        init.headers = headers({ accept: 'application/json', 'content-type': 'application/json' });
      }
      return (await (await call(path, init)).json()) as T;
    },
    async raw(path: string, init: { signal: AbortSignal; accept: string }): Promise<Response> {
      const res = await fetch(path, {
        headers: headers({ accept: init.accept }),
        signal: init.signal,
        cache: 'no-store',
      });
      if (res.status === 401) onUnauthenticated();
      return res;
    },
  };
}

export const clusterPath = (name: string, rest = '') => `/api/v1/clusters/${encodeURIComponent(name)}${rest}`;
