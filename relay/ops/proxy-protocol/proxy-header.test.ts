import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ParseStep, ProxyHeaderParser, V1_MAX_BYTES, V2_MAX_BYTES } from './proxy-header.js';

const SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(command: number, family: number, body: Buffer): Buffer {
  const head = Buffer.alloc(16);
  SIGNATURE.copy(head);
  head[12] = 0x20 | command;
  head[13] = family;
  head.writeUInt16BE(body.length, 14);
  return Buffer.concat([head, body]);
}

function inet(src: number[], dst: number[], sport: number, dport: number): Buffer {
  const b = Buffer.alloc(12);
  Buffer.from(src).copy(b, 0);
  Buffer.from(dst).copy(b, 4);
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(dport, 10);
  return b;
}

/** Pushes `bytes` in pieces cut at `cuts`; once done, `rest` also has the bytes not pushed (they go on to TLS). */
function parseAll(bytes: Buffer, cuts: number[] = []): ParseStep {
  const parser = new ProxyHeaderParser();
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    const step = parser.push(bytes.subarray(from, Math.max(from, cut)));
    from = Math.max(from, cut);
    if (step.kind === 'done') return { ...step, rest: Buffer.concat([step.rest, bytes.subarray(from)]) };
    if (step.kind !== 'more') return step;
  }
  return { kind: 'more' };
}

const CLIENT_HELLO = Buffer.from('160301002e010000', 'hex');

describe('ProxyHeaderParser: the spec examples', () => {
  it('reads a version 1 TCP4 line and hands back what follows it', () => {
    const line = Buffer.from('PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n');
    const step = parseAll(Buffer.concat([line, CLIENT_HELLO]));
    expect(step).toEqual({
      kind: 'done',
      header: { version: 1, client: { address: '192.168.0.1', port: 56324 } },
      rest: CLIENT_HELLO,
    });
  });

  it('reads a version 1 TCP6 line', () => {
    const step = parseAll(Buffer.from('PROXY TCP6 2001:db8::1 2001:db8::2 65535 443\r\n'));
    expect(step.kind === 'done' && step.header.client).toEqual({ address: '2001:db8::1', port: 65535 });
  });

  it('keeps the peer for UNKNOWN, up to the 107-byte worst case', () => {
    const f = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff';
    const worst = Buffer.from(`PROXY UNKNOWN ${f} ${f} 65535 65535\r\n`);
    expect(worst.length).toBe(V1_MAX_BYTES);
    expect(parseAll(worst)).toEqual({
      kind: 'done',
      header: { version: 1, client: null },
      rest: Buffer.alloc(0),
    });
    expect(parseAll(Buffer.from('PROXY UNKNOWN\r\n')).kind).toBe('done');
  });

  it('refuses a version 1 line without CRLF within 107 bytes, holding no more', () => {
    const parser = new ProxyHeaderParser();
    const step = parser.push(Buffer.from(`PROXY TCP4 ${'1'.repeat(200)}`));
    expect(step).toMatchObject({ kind: 'failed', reason: 'too_long' });
    expect(parser.buffered).toBe(V1_MAX_BYTES);
  });

  it.each([
    ['PROXY TCP4 192.168.0.1 192.168.0.11 56324\r\n', 'a field short'],
    ['PROXY TCP4 2001:db8::1 192.168.0.11 1 2\r\n', 'IPv6 under TCP4'],
    ['PROXY TCP4 192.168.0.1 192.168.0.11 65536 443\r\n', 'a port over 65535'],
    ['PROXY TCP4 192.168.0.1 192.168.0.11 056 443\r\n', 'a leading zero'],
    ['PROXY TCP4  192.168.0.1 192.168.0.11 1 2\r\n', 'two spaces'],
    ['PROXY UDP4 192.168.0.1 192.168.0.11 1 2\r\n', 'UDP4'],
    ['PROXY TCP4 192.168.0.1 192.168.0.11 1 2\n', 'LF without CR'],
  ])('refuses %j (%s)', (line) => {
    expect(parseAll(Buffer.from(line))).toMatchObject({ kind: 'failed', reason: 'malformed' });
  });

  it('reads a version 2 PROXY over TCP/IPv4, skipping TLVs, and hands back what follows', () => {
    const tlv = Buffer.from([0x05, 0x00, 0x03, 0x61, 0x62, 0x63]);
    const header = v2(1, 0x11, Buffer.concat([inet([203, 0, 113, 7], [10, 0, 0, 1], 40000, 443), tlv]));
    const step = parseAll(Buffer.concat([header, CLIENT_HELLO]));
    expect(step).toEqual({
      kind: 'done',
      header: { version: 2, client: { address: '203.0.113.7', port: 40000 } },
      rest: CLIENT_HELLO,
    });
  });

  it('reads a version 2 PROXY over TCP/IPv6', () => {
    const body = Buffer.alloc(36);
    Buffer.from('20010db8000000000000000000000007', 'hex').copy(body, 0);
    body.writeUInt16BE(1234, 32);
    const step = parseAll(v2(1, 0x21, body));
    expect(step.kind === 'done' && step.header.client).toEqual({
      address: '2001:db8:0:0:0:0:0:7',
      port: 1234,
    });
  });

  it('keeps the peer for LOCAL, AF_UNIX and UNSPEC', () => {
    for (const header of [
      v2(0, 0x00, Buffer.alloc(0)),
      v2(1, 0x31, Buffer.alloc(216)),
      v2(1, 0x00, Buffer.alloc(0)),
    ]) {
      expect(parseAll(header)).toMatchObject({ kind: 'done', header: { version: 2, client: null } });
    }
  });

  it('refuses a version 2 length over the cap from the head alone', () => {
    const head = v2(1, 0x11, Buffer.alloc(0));
    head.writeUInt16BE(V2_MAX_BYTES, 14);
    const parser = new ProxyHeaderParser();
    expect(parser.push(head)).toMatchObject({ kind: 'failed', reason: 'too_long' });
    expect(parser.buffered).toBe(16);
  });

  it('refuses a short address block, a bad version and an unknown command', () => {
    expect(parseAll(v2(1, 0x11, Buffer.alloc(8)))).toMatchObject({ reason: 'malformed' });
    expect(parseAll(v2(1, 0x21, Buffer.alloc(12)))).toMatchObject({ reason: 'malformed' });
    const badVersion = v2(1, 0x11, Buffer.alloc(12));
    badVersion[12] = 0x11;
    expect(parseAll(badVersion)).toMatchObject({ reason: 'malformed' });
    expect(parseAll(v2(2, 0x11, Buffer.alloc(12)))).toMatchObject({ reason: 'malformed' });
  });

  it('calls a TLS ClientHello or an HTTP request a missing header', () => {
    expect(parseAll(CLIENT_HELLO)).toMatchObject({ kind: 'failed', reason: 'missing' });
    expect(parseAll(Buffer.from('GET / HTTP/1.1\r\n'))).toMatchObject({ kind: 'failed', reason: 'missing' });
    expect(parseAll(Buffer.from('PROXX TCP4'))).toMatchObject({ kind: 'failed', reason: 'missing' });
    expect(parseAll(Buffer.from('0d0a0d0a000d0a5155495458', 'hex'))).toMatchObject({ reason: 'missing' });
  });
});

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
const port = fc.nat(65535);

/** A valid header of either version, with TLVs and trailing bytes. */
const validHeader = fc.oneof(
  fc
    .tuple(ipv4, ipv4, port, port)
    .map(([s, d, sp, dp]) => Buffer.from(`PROXY TCP4 ${s.join('.')} ${d.join('.')} ${sp} ${dp}\r\n`)),
  fc
    .tuple(ipv4, ipv4, port, port, fc.uint8Array({ maxLength: 200 }))
    .map(([s, d, sp, dp, tlvs]) => v2(1, 0x11, Buffer.concat([inet(s, d, sp, dp), Buffer.from(tlvs)]))),
  fc.uint8Array({ maxLength: 100 }).map((tlvs) => v2(0, 0x00, Buffer.from(tlvs))),
);

describe('ProxyHeaderParser: properties', () => {
  it('parses a valid header the same however it is split, and passes the bytes after it on unchanged', () => {
    fc.assert(
      fc.property(
        validHeader,
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.nat(800), { maxLength: 8 }),
        (header, after, cuts) => {
          const bytes = Buffer.concat([header, Buffer.from(after)]);
          const whole = parseAll(bytes);
          const split = parseAll(
            bytes,
            cuts.sort((a, b) => a - b),
          );
          expect(whole.kind).toBe('done');
          expect(split).toEqual(whole);
          expect(whole.kind === 'done' && whole.rest.equals(Buffer.from(after))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws on random bytes and never holds more than the cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 700 }), { maxLength: 6 }),
        fc.constantFrom(0x50, 0x0d, 0x16),
        (chunks, first) => {
          const parser = new ProxyHeaderParser();
          const prefix = first === 0x0d ? SIGNATURE : Buffer.from([first]);
          for (const chunk of [prefix, ...chunks.map((c) => Buffer.from(c))]) {
            const step = parser.push(chunk);
            expect(parser.buffered).toBeLessThanOrEqual(first === 0x50 ? V1_MAX_BYTES : V2_MAX_BYTES);
            if (step.kind !== 'more') break;
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
