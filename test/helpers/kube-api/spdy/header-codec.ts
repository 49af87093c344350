/**
 * SPDY/3 header compression: one zlib stream per direction for the whole session, primed with the SPDY
 * dictionary, each header block ended by a sync flush. Blocks are coded one at a time, in frame order, since
 * every block depends on the ones before it.
 */
import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.js';

function codec(stream: zlib.Inflate | zlib.Deflate): (block: Buffer) => Promise<Buffer> {
  const out: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => out.push(chunk));
  stream.on('error', () => {});
  let chain: Promise<unknown> = Promise.resolve();
  return (block) => {
    const done = chain.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          stream.write(block);
          stream.flush(zlib.constants.Z_SYNC_FLUSH, () => {
            if (stream.destroyed) return reject(new Error('SPDY header block does not inflate'));
            resolve(Buffer.concat(out.splice(0)));
          });
        }),
    );
    chain = done.catch(() => {});
    return done;
  };
}

export interface HeaderCodec {
  inflate(block: Buffer): Promise<Buffer>;
  deflate(block: Buffer): Promise<Buffer>;
  close(): void;
}

export function headerCodec(): HeaderCodec {
  const inflater = zlib.createInflate({ dictionary: SPDY3_DICTIONARY });
  const deflater = zlib.createDeflate({ dictionary: SPDY3_DICTIONARY });
  return {
    inflate: codec(inflater),
    deflate: codec(deflater),
    close: () => {
      inflater.destroy();
      deflater.destroy();
    },
  };
}
