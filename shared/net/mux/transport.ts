/**
 * Bindings of a MuxSession to an ordered byte stream: any Node Duplex (tests, TCP) or an ArqSession.
 */
import type { Duplex } from 'node:stream';
import type { TunnelError } from '../../errors.js';
import type { ArqSession } from '../arq/arq-session.js';
import type { MuxOptions } from './mux-options.js';
import { MuxSession } from './mux-session.js';

export type MuxBindingOptions = Omit<MuxOptions, 'write' | 'closeTransport'>;

export function muxOverDuplex(duplex: Duplex, opts: MuxBindingOptions): MuxSession {
  const mux = new MuxSession({
    ...opts,
    write: (b) => duplex.write(b),
    closeTransport: () => {
      duplex.end();
    },
  });
  duplex.on('data', (c: Buffer) => mux.input(c));
  duplex.on('drain', () => mux.transportDrained());
  duplex.on('end', () => mux.transportClosed());
  duplex.on('close', () => mux.transportClosed());
  duplex.on('error', (e: Error) => mux.transportClosed(e));
  return mux;
}

export function muxOverArq(arq: ArqSession, opts: MuxBindingOptions): MuxSession {
  const mux = new MuxSession({
    ...opts,
    write: arq.writeWhileOpen,
    closeTransport: () => {
      if (!arq.closed) arq.end();
    },
  });
  arq.on('data', mux.input); // no hop through here per chunk
  arq.on('drain', () => mux.transportDrained());
  arq.on('close', (err?: TunnelError) => mux.transportClosed(err));
  return mux;
}
