/**
 * Sees every socket an HTTP server hands to its 'upgrade' or 'connect' listeners. Node frees the socket's
 * HTTP parser and emits the event with no other sign; listening to 'upgrade' ourselves would change what Node
 * does (with any 'upgrade' listener it stops routing Upgrade requests to the 'request' handler, and the DERP
 * server answers 404 itself only while it is the sole listener). So the server's own `emit` is wrapped: the
 * observer runs first, then the event goes to its listeners unchanged.
 */
import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';

type Emit = (event: string | symbol, ...args: unknown[]) => boolean;

function isDuplex(v: unknown): v is Duplex {
  return typeof v === 'object' && v !== null && 'destroy' in v && 'write' in v;
}

/** Calls `onUpgrade(socket)` for each 'upgrade' / 'connect' event of `server`; returns the undo function. */
export function observeUpgrades(server: EventEmitter, onUpgrade: (socket: Duplex) => void): () => void {
  const original: Emit = server.emit;
  const observed: Emit = function (this: EventEmitter, event, ...args) {
    if (event === 'upgrade' || event === 'connect') {
      const socket = args[1];
      if (isDuplex(socket)) onUpgrade(socket);
    }
    return original.call(this, event, ...args);
  };
  server.emit = observed;
  return () => {
    if (server.emit === observed) server.emit = original;
  };
}
