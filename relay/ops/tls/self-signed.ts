/**
 * A self-signed ECDSA P-256 X.509 v3 certificate, built with node:crypto and the DER writer, so a
 * fresh relay needs no openssl binary. Layout (RFC 5280):
 *
 *   Certificate  = SEQUENCE { tbs, AlgorithmIdentifier ecdsa-with-SHA256, BIT STRING signature }
 *   tbs          = SEQUENCE { [0] version 2 (v3), serial, sigAlg, issuer Name, validity,
 *                             subject Name, SubjectPublicKeyInfo, [3] Extensions }
 *   Extensions   = basicConstraints (critical, CA), keyUsage (critical), extKeyUsage serverAuth,
 *                  subjectKeyIdentifier, subjectAltName (dNSName [2] / iPAddress [7])
 */
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';
import {
  bitString,
  bool,
  explicit,
  implicit,
  octetString,
  oid,
  seq,
  set,
  smallInt,
  time,
  uint,
  utf8,
} from './der.js';

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  subjectKeyId: '2.5.29.14',
  subjectAltName: '2.5.29.17',
} as const;

export interface SelfSignedCert {
  /** PEM certificate. */
  certPem: string;
  /** PEM PKCS#8 private key. */
  keyPem: string;
  /** DER certificate (what the CA pin hashes). */
  certDer: Buffer;
}

export interface SelfSignedOptions {
  commonName: string;
  /** DNS names and IP addresses (v4 or v6) for the subjectAltName extension. */
  altNames: string[];
  /** Wall-clock ms; validity starts one hour before (clock skew). */
  now: number;
  validDays?: number;
}

function name(commonName: string): Buffer {
  return seq(
    set(seq(oid(OID.organization), utf8('tunnel-relay'))),
    set(seq(oid(OID.commonName), utf8(commonName))),
  );
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand "::" then take 8 groups of 16 bits.
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  for (let i = 0; i < 8; i++) out.writeUInt16BE(Number.parseInt(groups[i] || '0', 16), i * 2);
  return out;
}

function ext(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), bool(true), octetString(value)) : seq(oid(id), octetString(value));
}

export function pemEncode(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`;
}

export function pemDecodeFirst(pem: string, label = 'CERTIFICATE'): Buffer {
  const m = new RegExp(`-----BEGIN ${label}-----([^-]+)-----END ${label}-----`).exec(pem);
  if (!m) throw new Error(`no ${label} block in PEM`);
  return Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64');
}

/** `sha256:<hex>` of a DER certificate: the CA pin agents are given in the join command. */
export function caPinOf(certDer: Buffer): string {
  return `sha256:${createHash('sha256').update(certDer).digest('hex')}`;
}

export function createSelfSignedCert(opts: SelfSignedOptions): SelfSignedCert {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const rawPoint = spki.subarray(spki.length - 65); // uncompressed EC point 04|X|Y
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const sigAlg = seq(oid(OID.ecdsaWithSha256));
  const subject = name(opts.commonName);
  const validDays = opts.validDays ?? 3650;
  const sans = [...new Set(opts.altNames)].map((n) =>
    isIP(n) ? implicit(7, ipBytes(n)) : implicit(2, Buffer.from(n, 'ascii')),
  );
  // keyUsage BIT STRING: digitalSignature (bit 0) + keyCertSign (bit 5) = 0b10000100, 2 unused bits.
  const keyUsage = Buffer.from([0x03, 0x02, 0x02, 0x84]);
  const extensions = seq(
    ext(OID.basicConstraints, true, seq(bool(true))),
    ext(OID.keyUsage, true, keyUsage),
    ext(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
    ext(OID.subjectKeyId, false, octetString(createHash('sha1').update(rawPoint).digest())),
    ext(OID.subjectAltName, false, seq(...sans)),
  );
  const tbs = seq(
    explicit(0, smallInt(2)),
    uint(serial),
    sigAlg,
    subject,
    seq(time(opts.now - 3_600_000), time(opts.now + validDays * 86_400_000)),
    subject,
    spki,
    explicit(3, extensions),
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const certDer = seq(tbs, sigAlg, bitString(signature));
  return {
    certDer,
    certPem: pemEncode('CERTIFICATE', certDer),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** True if the PEM private key matches the certificate's public key. */
export function keyMatchesCert(keyPem: string, certDer: Buffer): boolean {
  const pub = createPublicKey(keyPem).export({ type: 'spki', format: 'der' });
  return certDer.includes(pub);
}
