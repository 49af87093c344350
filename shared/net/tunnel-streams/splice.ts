/**
 * Joins a mux stream and a socket both ways: pipe() in each direction (backpressure: write() false ->
 * 'drain'), half-close carried across (one side's end ends the other's writable side), and an abnormal
 * end of either side destroys the other. The stream's chunks of one receive burst reach the socket as
 * one write (burst-cork.ts). `socketError` maps a socket failure to the error the stream is reset with
 * (its TunnelError code picks the RST code).
 */
import type { Duplex } from 'node:stream';
import { finished } from 'node:stream';
import type { TunnelError } from '../../errors.js';
import { corkPerBurst } from './burst-cork.js';

export function splice(
  stream: Duplex,
  socket: Duplex,
  socketError: (err: Error) => TunnelError,
  streamError: (err: Error) => Error = (e) => e,
): void {
  socket.pipe(stream);
  stream.pipe(socket);
  corkPerBurst(stream, socket);
  finished(socket, (err) => {
    if (err && !stream.destroyed) stream.destroy(socketError(err));
  });
  finished(stream, (err) => {
    if (err && !socket.destroyed) socket.destroy(streamError(err));
  });
}
