/**
 * The receive rule: who may keep a received datagram, stated once here for the whole packet path.
 *
 * Every transport hands a datagram up in memory that nothing below it will write again: a WebSocket
 * message (and the DERP frames cut from it, derp/frame-parser.ts), a UDP read, a GRO run read into a buffer
 * of its own and split into views of it (tunnel-endpoint/gso-socket.ts), a packet the relay delivers to an
 * in-process client (its send-path memory is never given back, relay/data/derp/local-peer.ts). From then on
 * the memory belongs to the receiver, and every layer above may keep views into it for as long as it
 * likes: WireGuard opens it in place and hands up a view of the plaintext; the stream binding hands the ARQ a
 * view of the UDP payload; the ARQ keeps views of segments until the application has read them; the hub's
 * handshake queue holds datagrams until it gets to them. Nothing above a transport copies to keep.
 *
 * A transport that recycles its receive memory (a pool, a ring, a reused read buffer) must copy each
 * datagram into fresh memory before handing it up. Memory a pool handed down to the send path
 * (buffer-pool.ts) is never handed up while its SendSink may still give it back.
 *
 * test/poisoned-pools.test.ts checks the rule end to end: a transfer through the real relay with every
 * pool poisoning what is given back, and a transport breaking the rule (recycling its receive buffers)
 * failing the same transfer.
 */

/**
 * A datagram (or a view into one) handed up under the receive rule: the receiver owns the memory and may
 * keep views into it.
 */
export type Received = Buffer;
