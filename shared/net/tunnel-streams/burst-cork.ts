/**
 * Merges the chunks a readable hands a socket during one receive burst into one socket write. A burst is
 * what arrives before the event loop's check phase: libuv reads up to 32 UDP datagrams per poll and Node
 * runs each one's callbacks (and microtasks, and process.nextTick) before the next, so the ARQ releases
 * its in-order segments one datagram at a time; corking at the first chunk and uncorking in a
 * setImmediate turns the burst's writes into one writev. Backpressure is unchanged: a corked socket's
 * write() still returns false past its highWaterMark (pipe() pauses the source) and 'drain' follows the
 * flush.
 */
import type { Readable, Writable } from 'node:stream';

export function corkPerBurst(source: Readable, socket: Writable): void {
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  // Before pipe()'s own 'data' listener, so the write it makes lands in the corked socket.
  source.prependListener('data', () => {
    if (corked || socket.destroyed || socket.writableEnded) return;
    corked = true;
    socket.cork();
    setImmediate(uncork);
  });
}
