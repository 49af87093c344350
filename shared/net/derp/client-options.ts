/** Options, events and the public interface of the relay WebSocket client (client.ts). */
import type { Agent } from 'node:http';
import type { Clock } from '../../clock.js';
import type { TunnelError } from '../../errors.js';
import type { KeyPair } from '../../keys.js';
import type { BackoffOptions } from './backoff.js';
import type { DerpClientLike, DerpPacketHandler, DerpPeerGoneHandler } from './types.js';

export type DerpClientState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface DerpStateEvent {
  readonly state: DerpClientState;
  /** Failed attempts the backoff counts (it starts over once a connection has stayed up 1 s). */
  readonly attempt: number;
  /** For 'reconnecting': the wait before the next attempt. */
  readonly delayMs?: number;
  /** Why the last connection ended or failed (CA_PIN_MISMATCH, DERP_AUTH_FAILED, TIMEOUT, CLOSED, ...). */
  readonly error?: TunnelError;
  /** WebSocket close code from the relay (DerpCloseCode in close-codes.ts). */
  readonly closeCode?: number;
  /** A Health frame's text ('' clears a previous problem). */
  readonly health?: string;
}

export interface DerpClientOptions {
  url: string;
  keyPair: KeyPair;
  /** Refuse relays whose ServerKey is a different key. */
  serverPublicKey?: Buffer;
  /** `sha256:<hex>` of the relay's leaf certificate (DER). Without `ca`, replaces CA verification. */
  caPin?: string;
  ca?: string | Buffer | Array<string | Buffer>;
  /** HTTP agent, e.g. one that tunnels through an HTTP CONNECT proxy. */
  agent?: Agent;
  clock?: Clock;
  random?: () => number;
  onPacket: DerpPacketHandler;
  onPeerGone?: DerpPeerGoneHandler;
  onState?: (e: DerpStateEvent) => void;
  /** Send a Ping after this much silence (default 5 s). */
  pingIntervalMs?: number;
  /** Drop the connection after this much silence (default 12 s; detection within deadAfterMs + 2.5 s). */
  deadAfterMs?: number;
  /** TLS + upgrade + ServerKey + ServerInfo must finish within this (default 10 s). */
  handshakeTimeoutMs?: number;
  /** send() returns false while the socket holds more than this many unsent bytes (default 1 MiB). */
  writeHighWaterBytes?: number;
  backoff?: BackoffOptions;
}

/** Why send() dropped a packet: no connection up, or its socket held more than writeHighWaterBytes. */
export type DerpClientDropReason = 'not_connected' | 'backed_up';

export interface DerpClientStats {
  packetsIn: number;
  bytesIn: number;
  packetsOut: number;
  bytesOut: number;
  /** send() calls that returned false (either DerpClientDropReason). */
  dropped: number;
  /** Connections that reached 'connected'. */
  connects: number;
}

export interface DerpClient extends DerpClientLike {
  readonly state: DerpClientState;
  readonly stats: Readonly<DerpClientStats>;
  /** Resolves at the next (or current) 'connected'; rejects with CLOSED on close() or TIMEOUT. */
  whenConnected(timeoutMs?: number): Promise<void>;
  /** A reconnect waiting out its backoff tries now (the relay answered elsewhere); true when one started. */
  reconnectNow(): boolean;
}
