/**
 * Asks a hub replica whether it takes new work: `GET /readyz` on a TLS connection to its mesh URL whose certificate
 * must hash to the fleet pin (mesh-dial.ts). True only for a 200 within the timeout; a draining replica answers 503.
 */
import http from 'node:http';
import { dialReplica } from '../mesh/mesh-dial.js';

/** A probe without an answer after this long counts as not ready. */
export const PROBE_TIMEOUT_MS = 2_000;

export async function probeReady(
  meshUrl: string,
  caPin: string,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<boolean> {
  let socket: Awaited<ReturnType<typeof dialReplica>>;
  try {
    socket = await dialReplica({ meshUrl, cluster: null }, caPin, timeoutMs);
  } catch {
    return false;
  }
  socket.on('error', () => {});
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, timeoutMs);
    const req = http.request(
      {
        method: 'GET',
        path: '/readyz',
        headers: { host: new URL(meshUrl).host, connection: 'close' },
        createConnection: () => socket,
      },
      (res) => {
        res.resume();
        clearTimeout(timer);
        socket.destroy();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
    req.end();
  });
}
