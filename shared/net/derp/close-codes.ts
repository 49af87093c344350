/**
 * WebSocket close codes of a DERP connection, shared by the server that sends them and the client that
 * reacts to them (4000-4999 is the application range). Write and ping timeouts send no close frame: the
 * socket is terminated, since a stuck or dead peer could not read one.
 */
export const DerpCloseCode = {
  /** The relay is shutting down or restarting: reconnect (to another replica behind the same address). */
  GoingAway: 1001,
  /** The key is not registered to an accepted cluster, or its proof of possession failed. */
  NotAdmitted: 4001,
  /** A malformed or out-of-order frame. */
  Protocol: 4002,
  /** A newer connection for the same key took this one's place. */
  Replaced: 4003,
  /** Closed by the relay's operator or policy (cluster deleted, denied, client limit). */
  ClosedByServer: 4004,
  /** No valid ClientInfo within the handshake timeout. */
  HandshakeTimeout: 4005,
} as const;
