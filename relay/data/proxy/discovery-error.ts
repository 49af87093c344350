/**
 * Errors on kubectl's discovery requests (`GET /api`, `GET /apis`: what `kubectl get pods` and
 * `kubectl api-resources` ask first; `GET /version`: `kubectl version`). client-go reads those answers raw and never
 * decodes a `Status` from them (without this, `kubectl version` prints `("unknown")`): on a
 * 503 it prints its fixed "the server is currently unable to handle the request", on a 504 another fixed line. Only a
 * 5xx it has no fixed text for, with a `text/plain` body, gets that body into the message kubectl prints:
 *   Error from server (InternalError): an error on the server ("agent for cluster edge-1 is not connected (last seen
 *   2m ago)") has prevented the request from succeeding
 * So a server-side failure of a discovery request is answered 502 with the message as plain text; every other
 * request keeps its status and the `Status` object (kube-status.ts).
 */
const DISCOVERY_PATHS = new Set(['/api', '/api/', '/apis', '/apis/', '/version', '/version/']);

/** True for a GET of a discovery document; `upstreamPath` is the path after `/proxy` (query included). */
export function isDiscoveryRequest(method: string | undefined, upstreamPath: string): boolean {
  return method === 'GET' && DISCOVERY_PATHS.has(upstreamPath.split('?')[0] ?? '');
}

/** The answer for an error with HTTP `status` on a discovery request, or null to answer it as usual. */
export function discoveryErrorAnswer(
  status: number,
  message: string,
): { status: number; body: string } | null {
  if (status < 500) return null;
  return { status: 502, body: `${message.replace(/\s+/g, ' ').trim()}\n` };
}
