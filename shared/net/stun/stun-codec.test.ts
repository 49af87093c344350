import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ATTR_CHANGE_REQUEST,
  ATTR_FINGERPRINT,
  ATTR_MAPPED_ADDRESS,
  ATTR_XOR_MAPPED_ADDRESS,
  decodeMappedAddress,
  encodeBindingRequest,
  encodeBindingSuccess,
  formatStunAddress,
  isStunBindingSuccess,
  parseStunRequest,
  STUN_BINDING_REQUEST,
  STUN_BINDING_SUCCESS,
  STUN_MAGIC_COOKIE,
  STUN_MAX_REQUEST_BYTES,
  type StunBindingRequest,
} from './stun-codec.js';

interface Attr {
  type: number;
  value: Buffer;
}

/** A request built independently of the codec: header, attributes padded to 4, optional FINGERPRINT. */
function request(opts: {
  cookie?: boolean;
  id?: Buffer;
  attrs?: Attr[];
  fingerprint?: boolean;
  type?: number;
}) {
  const parts: Buffer[] = [];
  for (const a of opts.attrs ?? []) {
    const h = Buffer.alloc(4);
    h.writeUInt16BE(a.type, 0);
    h.writeUInt16BE(a.value.length, 2);
    parts.push(h, a.value, Buffer.alloc((4 - (a.value.length % 4)) % 4));
  }
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(20);
  head.writeUInt16BE(opts.type ?? STUN_BINDING_REQUEST, 0);
  head.writeUInt16BE(body.length + (opts.fingerprint ? 8 : 0), 2);
  const id = opts.id ?? randomBytes(opts.cookie === false ? 16 : 12);
  if (opts.cookie === false) id.copy(head, 4);
  else {
    head.writeUInt32BE(STUN_MAGIC_COOKIE, 4);
    id.copy(head, 8);
  }
  let msg = Buffer.concat([head, body]);
  if (opts.fingerprint) {
    const fp = Buffer.alloc(8);
    fp.writeUInt16BE(ATTR_FINGERPRINT, 0);
    fp.writeUInt16BE(4, 2);
    fp.writeUInt32BE((crc32(msg) ^ 0x5354554e) >>> 0, 4);
    msg = Buffer.concat([msg, fp]);
  }
  return msg;
}

const asRequest = (b: Buffer): StunBindingRequest => {
  const r = parseStunRequest(b);
  if (r.kind !== 'request') throw new Error(`not a request: ${r.reason}`);
  return r;
};

describe('STUN Binding codec', () => {
  it('answers an RFC 5389 request with XOR-MAPPED-ADDRESS, decoded by hand', () => {
    const id = Buffer.from('0102030405060708090a0b0c', 'hex');
    const res = encodeBindingSuccess(asRequest(request({ id })), {
      address: Buffer.from([192, 0, 2, 1]),
      port: 32853,
    });
    expect(res.readUInt16BE(0)).toBe(STUN_BINDING_SUCCESS);
    expect(res.readUInt16BE(2)).toBe(12);
    expect(res.subarray(4, 8).toString('hex')).toBe('2112a442');
    expect(res.subarray(8, 20).equals(id)).toBe(true);
    expect(res.readUInt16BE(20)).toBe(ATTR_XOR_MAPPED_ADDRESS);
    expect(res.readUInt16BE(22)).toBe(8);
    expect(res[25]).toBe(0x01);
    // RFC 5769 style arithmetic: port ^ 0x2112, address ^ 0x2112A442.
    expect(res.readUInt16BE(26)).toBe(32853 ^ 0x2112);
    expect(res.readUInt32BE(28)).toBe((0xc0000201 ^ 0x2112a442) >>> 0);
  });

  it('answers an IPv6 sender with the address XORed with cookie and transaction id', () => {
    const addr = Buffer.from('20010db8000000000000000000000001', 'hex');
    const req = asRequest(request({}));
    const res = encodeBindingSuccess(req, { address: addr, port: 443 });
    expect(res[25]).toBe(0x02);
    const x = res.subarray(28, 44);
    const key = res.subarray(4, 20);
    expect(Buffer.from(x.map((b, i) => b ^ (key[i] ?? 0))).equals(addr)).toBe(true);
    expect(decodeMappedAddress(res)).toEqual({ address: addr, port: 443 });
  });

  it('answers a classic RFC 3489 request (no cookie) with MAPPED-ADDRESS and its 16-byte id', () => {
    const id = randomBytes(16);
    id.writeUInt32BE(0x01020304, 0);
    const req = asRequest(request({ cookie: false, id }));
    expect(req.rfc).toBe(3489);
    const res = encodeBindingSuccess(req, { address: Buffer.from([10, 1, 2, 3]), port: 5000 });
    expect(res.subarray(4, 20).equals(id)).toBe(true);
    expect(res.readUInt16BE(20)).toBe(ATTR_MAPPED_ADDRESS);
    expect(res.readUInt16BE(26)).toBe(5000);
    expect([...res.subarray(28, 32)]).toEqual([10, 1, 2, 3]);
  });

  it('carries a FINGERPRINT back when the request had a valid one (Tailscale-style request)', () => {
    const software = { type: 0x8022, value: Buffer.from('tailnode') };
    const req = asRequest(request({ attrs: [software], fingerprint: true }));
    expect(req.fingerprint).toBe(true);
    const res = encodeBindingSuccess(req, { address: Buffer.from([127, 0, 0, 1]), port: 9 });
    const fpAt = res.length - 8;
    expect(res.readUInt16BE(fpAt)).toBe(ATTR_FINGERPRINT);
    expect(res.readUInt32BE(fpAt + 4)).toBe((crc32(res.subarray(0, fpAt)) ^ 0x5354554e) >>> 0);
  });

  it('encodes the probe request the agent sends, and formats mapped addresses', () => {
    const id = randomBytes(12);
    const req = asRequest(encodeBindingRequest(id));
    expect(req.rfc).toBe(5389);
    expect(req.id.subarray(4).equals(id)).toBe(true);
    expect(() => encodeBindingRequest(Buffer.alloc(11))).toThrow(/11 bytes/);
    expect(formatStunAddress({ address: Buffer.from([203, 0, 113, 7]), port: 40123 })).toBe(
      '203.0.113.7:40123',
    );
    const v6 = Buffer.from('20010db8000000000000000000000001', 'hex');
    expect(formatStunAddress({ address: v6, port: 1 })).toBe('[2001:db8:0:0:0:0:0:1]:1');
  });

  it('drops by reason: short, too long, not STUN, responses, bad attributes and fingerprints, change requests', () => {
    const reason = (b: Buffer) => {
      const r = parseStunRequest(b);
      return r.kind === 'ignore' ? r.reason : 'request';
    };
    expect(reason(Buffer.alloc(19))).toBe('short');
    expect(reason(request({ attrs: [{ type: 0x8022, value: Buffer.alloc(STUN_MAX_REQUEST_BYTES) }] }))).toBe(
      'too-long',
    );
    const wg = Buffer.alloc(148);
    wg[0] = 1; // a WireGuard initiation on the wrong port
    expect(reason(wg)).toBe('not-stun');
    const lying = request({});
    lying.writeUInt16BE(8, 2);
    expect(reason(lying)).toBe('not-stun');
    expect(reason(request({ type: STUN_BINDING_SUCCESS }))).toBe('not-binding-request');
    const cut = request({ attrs: [{ type: 0x8022, value: Buffer.alloc(8) }] });
    cut.writeUInt16BE(64, 22);
    expect(reason(cut)).toBe('attribute');
    const badFp = request({ fingerprint: true });
    badFp[badFp.length - 1] = (badFp[badFp.length - 1] ?? 0) ^ 1;
    expect(reason(badFp)).toBe('fingerprint');
    const change = Buffer.from([0, 0, 0, 0x06]);
    expect(reason(request({ attrs: [{ type: ATTR_CHANGE_REQUEST, value: change }] }))).toBe('change-request');
    const noChange = Buffer.alloc(4);
    expect(reason(request({ attrs: [{ type: ATTR_CHANGE_REQUEST, value: noChange }] }))).toBe('request');
  });

  it('property: any datagram is classified without throwing, and only well-formed requests are answered', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 700 }), (bytes) => {
        const r = parseStunRequest(Buffer.from(bytes));
        if (r.kind === 'request') {
          expect(bytes.length).toBeGreaterThanOrEqual(20);
          expect(Buffer.from(bytes).readUInt16BE(0)).toBe(STUN_BINDING_REQUEST);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('property: built requests with any attributes parse, and the answer decodes to the sender', () => {
    const attr = fc.record({
      type: fc.integer({ min: 0x8000, max: 0xffff }).filter((t) => t !== ATTR_FINGERPRINT),
      value: fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u)),
    });
    fc.assert(
      fc.property(
        fc.array(attr, { maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        fc.oneof(
          fc.uint8Array({ minLength: 4, maxLength: 4 }),
          fc.uint8Array({ minLength: 16, maxLength: 16 }),
        ),
        fc.integer({ min: 0, max: 65535 }),
        (attrs, cookie, fingerprint, addr, port) => {
          const req = asRequest(request({ attrs, cookie, fingerprint }));
          expect(req.rfc).toBe(cookie ? 5389 : 3489);
          expect(req.fingerprint).toBe(fingerprint);
          const res = encodeBindingSuccess(req, { address: Buffer.from(addr), port });
          expect(decodeMappedAddress(res)).toEqual({ address: Buffer.from(addr), port });
          // A response is never taken for a request (no reflection loops between two responders).
          expect(parseStunRequest(res).kind).toBe('ignore');
        },
      ),
      { numRuns: 500 },
    );
  });

  it('property: truncating or extending a valid request by any amount never yields a request of another length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.boolean(), (n, longer) => {
        const ok = request({ attrs: [{ type: 0x8022, value: Buffer.from('tailnode') }], fingerprint: true });
        const bad = longer ? Buffer.concat([ok, Buffer.alloc(n)]) : ok.subarray(0, ok.length - n);
        expect(parseStunRequest(bad).kind).toBe('ignore');
      }),
    );
  });

  it('tells Binding success responses from requests and WireGuard messages', () => {
    const res = encodeBindingSuccess(asRequest(request({})), {
      address: Buffer.from([192, 0, 2, 1]),
      port: 1,
    });
    expect(isStunBindingSuccess(res)).toBe(true);
    expect(isStunBindingSuccess(res.subarray(0, 19))).toBe(false);
    expect(isStunBindingSuccess(request({}))).toBe(false);
    expect(
      isStunBindingSuccess(
        encodeBindingSuccess(asRequest(request({ cookie: false })), {
          address: Buffer.from([192, 0, 2, 1]),
          port: 1,
        }),
      ),
    ).toBe(false);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.uint8Array({ maxLength: 100 }), (type, rest) => {
        expect(isStunBindingSuccess(Buffer.from([type, 0, 0, 0, ...rest]))).toBe(false);
      }),
    );
  });
});
