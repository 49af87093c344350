import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { duplexPair } from '../../../test/helpers/duplex-pair.js';
import { realClock } from '../../clock.js';
import { isTunnelError, type TunnelError } from '../../errors.js';
import type { MuxStream } from './mux-stream.js';
import {
  encodeOpenMessage,
  OPEN_OK,
  OPEN_REFUSED,
  OPEN_TYPE_REPLY,
  OPEN_TYPE_REQUEST,
  OPEN_UPSTREAM_FAILED,
  OpenMessageReader,
  openTarget,
  readOpenRequest,
  replyOpen,
} from './open-target.js';
import { muxOverDuplex } from './transport.js';

function sessions() {
  const [a, b] = duplexPair({ maxPiece: 5 });
  const client = muxOverDuplex(a, { clock: realClock, role: 'client', keepAliveMs: 0 });
  const server = muxOverDuplex(b, { clock: realClock, role: 'server', keepAliveMs: 0 });
  return { client, server };
}

describe('open-target messages', () => {
  it('parse identically however they are chunked, and keep the bytes after them', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }),
        fc.integer({ min: 0, max: 3 }),
        fc.uint8Array({ maxLength: 50 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }),
        (text, status, after, sizes) => {
          const bytes = Buffer.concat([encodeOpenMessage(OPEN_TYPE_REPLY, status, text), Buffer.from(after)]);
          const r = new OpenMessageReader();
          let off = 0;
          let i = 0;
          let res: ReturnType<OpenMessageReader['push']> = null;
          while (!res) {
            const n = sizes[i++ % sizes.length]!;
            res = r.push(bytes.subarray(off, off + n));
            if (!res) off += n;
          }
          expect(res.msg).toEqual({ type: OPEN_TYPE_REPLY, status, text });
          const restStart = bytes.length - after.length;
          expect(Buffer.concat([res.rest, bytes.subarray(off + sizes[(i - 1) % sizes.length]!)])).toEqual(
            bytes.subarray(restStart),
          );
        },
      ),
    );
  });

  it('rejects bad versions, types and lengths with TunnelErrors', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 6, maxLength: 40 }), (raw) => {
        const r = new OpenMessageReader();
        try {
          r.push(Buffer.from(raw));
        } catch (err) {
          expect((err as TunnelError).name).toBe('TunnelError');
        }
      }),
    );
    const long = Buffer.from([1, 1, 0, 0, 0xff, 0xff]);
    expect(() => new OpenMessageReader().push(long)).toThrow(/over 1024/);
  });
});

describe('openTarget over a mux session', () => {
  it('accepts a target, then carries application bytes both ways', async () => {
    const { client, server } = sessions();
    server.on('stream', async (s: MuxStream) => {
      const target = await readOpenRequest(s, { clock: realClock });
      replyOpen(s, OPEN_OK);
      s.write(`hello from ${target}`);
      let got = '';
      s.on('data', (c: Buffer) => {
        got += c.toString();
        if (got.length === 4) s.end(got);
      });
    });
    const s = await openTarget(client, 'kubernetes.default:443', { clock: realClock });
    const parts: Buffer[] = [];
    s.on('data', (c: Buffer) => parts.push(c));
    s.write('ping');
    await new Promise((r) => s.on('end', r));
    expect(Buffer.concat(parts).toString()).toBe('hello from kubernetes.default:443ping');
  });

  it('rejects with the reason when the acceptor refuses or the upstream fails', async () => {
    const { client, server } = sessions();
    server.on('stream', async (s: MuxStream) => {
      const target = await readOpenRequest(s, { clock: realClock });
      if (target.startsWith('evil')) replyOpen(s, OPEN_REFUSED, `${target} is not on the allowlist`);
      else replyOpen(s, OPEN_UPSTREAM_FAILED, 'connection refused');
    });
    const e1 = await openTarget(client, 'evil:22', { clock: realClock }).catch((e: unknown) => e);
    expect(isTunnelError(e1, 'STREAM_REFUSED')).toBe(true);
    expect((e1 as Error).message).toBe('evil:22: evil:22 is not on the allowlist');
    const e2 = await openTarget(client, 'db:5432', { clock: realClock }).catch((e: unknown) => e);
    expect(isTunnelError(e2, 'UPSTREAM_FAILED')).toBe(true);
  });

  it('times out when no reply comes', async () => {
    const { client } = sessions();
    const e = await openTarget(client, 'slow:1', { clock: realClock, timeoutMs: 50 }).catch(
      (x: unknown) => x,
    );
    expect(isTunnelError(e, 'TIMEOUT')).toBe(true);
  });

  it('an acceptor sees a request (not a reply) and refuses garbage', async () => {
    const { client, server } = sessions();
    const got = new Promise<unknown>((resolve) => {
      server.on('stream', (s: MuxStream) => {
        readOpenRequest(s, { clock: realClock }).then(resolve, resolve);
      });
    });
    const s = client.open();
    s.on('error', () => {});
    s.write(encodeOpenMessage(OPEN_TYPE_REPLY, 0, 'x'));
    expect(isTunnelError(await got, 'WIRE_MALFORMED')).toBe(true);
    expect(encodeOpenMessage(OPEN_TYPE_REQUEST, 0, 'a:1')[1]).toBe(1);
  });
});
