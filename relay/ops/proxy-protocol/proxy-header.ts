/**
 * The PROXY protocol header a TCP load balancer writes before the client's bytes (haproxy's `send-proxy` is
 * version 1, `send-proxy-v2` version 2; the spec is haproxy's doc/proxy-protocol.txt). ProxyHeaderParser is a
 * resumable state machine over the chunks a socket delivers: the header may arrive split at any byte, and the
 * bytes after it (the TLS ClientHello) come back untouched as `rest`. It does no I/O and never holds more than
 * the header's cap:
 *   - version 1: one text line `PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n` or `PROXY UNKNOWN ...\r\n`, at
 *     most V1_MAX_BYTES (107) with the CRLF;
 *   - version 2: a 16-byte binary head (12-byte signature, version/command, family, length) and `length` bytes
 *     of addresses and TLVs; the length is checked against V2_MAX_BYTES before anything after the head is held.
 * The result names the client's address, or null when the peer's own address stands: a v2 LOCAL command (the
 * balancer's own health check), v1 UNKNOWN, and v2 families other than TCP over IPv4/IPv6 (UNSPEC, AF_UNIX,
 * datagrams). TLVs are skipped.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Longest version 1 line, CRLF included (the spec's worst case, `PROXY UNKNOWN` with two IPv6 addresses). */
export const V1_MAX_BYTES = 107;
/** Longest version 2 header taken: the 16-byte head, the IPv6 address block (36) and up to 484 bytes of TLVs. */
export const V2_MAX_BYTES = 536;
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V2_HEAD_BYTES = 16;
const V2_INET_BYTES = 12;
const V2_INET6_BYTES = 36;

/** The client the header names. */
export interface ProxiedClient {
  address: string;
  port: number;
}

export interface ProxyHeader {
  version: 1 | 2;
  /** The client, or null when the connection keeps its peer address (LOCAL, UNKNOWN, AF_UNIX, UNSPEC). */
  client: ProxiedClient | null;
}

/** Why a trusted peer's connection is closed (`timeout` is the caller's: the parser has no clock). */
export type ProxyHeaderFailure = 'missing' | 'malformed' | 'too_long';

export type ParseStep =
  | { kind: 'more' }
  | { kind: 'done'; header: ProxyHeader; rest: Buffer }
  | { kind: 'failed'; reason: ProxyHeaderFailure; detail: string };

const MORE: ParseStep = { kind: 'more' };

function failed(reason: ProxyHeaderFailure, detail: string): ParseStep {
  return { kind: 'failed', reason, detail };
}

/** True when the first `held.length` bytes (at most `whole.length`) agree with `whole`. */
function agreesWith(held: Buffer, whole: Buffer): boolean {
  const n = Math.min(held.length, whole.length);
  return held.subarray(0, n).equals(whole.subarray(0, n));
}

const PORT = /^(0|[1-9][0-9]{0,4})$/;

function v1Port(text: string): number | null {
  const n = PORT.test(text) ? Number(text) : Number.NaN;
  return n <= 65535 ? n : null;
}

/** The fields of a v1 line after `PROXY ` (without the CRLF). */
function v1Header(fields: string): ProxyHeader | string {
  const parts = fields.split(' ');
  if (parts[0] === 'UNKNOWN') return { version: 1, client: null };
  const [family, src = '', dst = '', sport = '', dport = ''] = parts;
  const isAddress = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : null;
  if (isAddress === null) return 'version 1: the protocol is not TCP4, TCP6 or UNKNOWN';
  if (parts.length !== 5) return `version 1: expected 5 fields after PROXY, got ${parts.length}`;
  if (!isAddress(src) || !isAddress(dst)) return `version 1: an address is not ${family}`;
  const port = v1Port(sport);
  if (port === null || v1Port(dport) === null) return 'version 1: a port is not a number 0-65535';
  return { version: 1, client: { address: src, port } };
}

function ipv6Text(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(':');
}

/** The version 2 header whose head is `head` and whose address block and TLVs are `body`. */
function v2Header(head: Buffer, body: Buffer): ProxyHeader | string {
  const versionCommand = head[12] ?? 0;
  if (versionCommand >> 4 !== 2) return `version 2: version nibble is ${versionCommand >> 4}, not 2`;
  const command = versionCommand & 0x0f;
  if (command === 0) return { version: 2, client: null };
  if (command !== 1) return `version 2: command ${command} is neither LOCAL (0) nor PROXY (1)`;
  const family = head[13] ?? 0;
  if (family === 0x11) {
    if (body.length < V2_INET_BYTES) return 'version 2: the IPv4 address block is short';
    return {
      version: 2,
      client: { address: [...body.subarray(0, 4)].join('.'), port: body.readUInt16BE(8) },
    };
  }
  if (family === 0x21) {
    if (body.length < V2_INET6_BYTES) return 'version 2: the IPv6 address block is short';
    return { version: 2, client: { address: ipv6Text(body.subarray(0, 16)), port: body.readUInt16BE(32) } };
  }
  return { version: 2, client: null };
}

/**
 * Reads one PROXY header from the start of a connection. push() each chunk as it arrives until the step is not
 * `more`; after `done` or `failed` the parser takes nothing more.
 */
export class ProxyHeaderParser {
  /** The header's bytes received so far (never more than the cap of the version it turned out to be). */
  #held: Buffer = Buffer.alloc(0);
  #settled = false;

  /** Bytes held: at most V2_MAX_BYTES, and at most V1_MAX_BYTES once the header is known to be version 1. */
  get buffered(): number {
    return this.#held.length;
  }

  push(chunk: Buffer): ParseStep {
    if (this.#settled) return failed('malformed', 'the header was already read');
    const room = this.#limit(this.#held.length > 0 ? this.#held : chunk) - this.#held.length;
    this.#held = Buffer.concat([this.#held, chunk.subarray(0, room)]);
    const step = this.#step(chunk.subarray(room));
    if (step.kind !== 'more') this.#settled = true;
    return step;
  }

  /** How many bytes the header may take, as far as its first bytes (held, or the first chunk) tell. */
  #limit(start: Buffer): number {
    if (start.length > 0 && start[0] === V1_PREFIX[0]) return V1_MAX_BYTES;
    if (start.length < V2_HEAD_BYTES) return V2_MAX_BYTES;
    return Math.min(V2_MAX_BYTES, V2_HEAD_BYTES + start.readUInt16BE(14));
  }

  #step(tail: Buffer): ParseStep {
    const held = this.#held;
    if (held.length === 0) return MORE;
    if (held[0] === V1_PREFIX[0]) return this.#parseV1(tail);
    if (held[0] === V2_SIGNATURE[0]) return this.#parseV2(tail);
    return failed('missing', 'the connection does not start with a PROXY header');
  }

  #parseV1(tail: Buffer): ParseStep {
    const held = this.#held;
    if (!agreesWith(held, V1_PREFIX))
      return failed('missing', 'the connection does not start with a PROXY header');
    const lf = held.indexOf(0x0a);
    if (lf === -1) {
      return held.length >= V1_MAX_BYTES
        ? failed('too_long', `version 1: no CRLF within ${V1_MAX_BYTES} bytes`)
        : MORE;
    }
    if (lf < V1_PREFIX.length || held[lf - 1] !== 0x0d)
      return failed('malformed', 'version 1: LF without CR');
    const header = v1Header(held.subarray(V1_PREFIX.length, lf - 1).toString('latin1'));
    if (typeof header === 'string') return failed('malformed', header);
    return { kind: 'done', header, rest: Buffer.concat([held.subarray(lf + 1), tail]) };
  }

  #parseV2(tail: Buffer): ParseStep {
    const held = this.#held;
    if (!agreesWith(held, V2_SIGNATURE))
      return failed('missing', 'the connection does not start with a PROXY header');
    if (held.length < V2_HEAD_BYTES) return MORE;
    const total = V2_HEAD_BYTES + held.readUInt16BE(14);
    if (total > V2_MAX_BYTES) {
      return failed('too_long', `version 2: the header is ${total} bytes, more than ${V2_MAX_BYTES}`);
    }
    if (held.length < total) return MORE;
    const header = v2Header(held.subarray(0, V2_HEAD_BYTES), held.subarray(V2_HEAD_BYTES, total));
    if (typeof header === 'string') return failed('malformed', header);
    return { kind: 'done', header, rest: Buffer.concat([held.subarray(total), tail]) };
  }
}
