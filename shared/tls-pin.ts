/**
 * CA pins: `sha256:<64 hex digits>`, the SHA-256 of the relay's leaf certificate in DER form. The join
 * command carries the pin so an agent can trust a relay's self-signed certificate without a CA.
 * Pins are public values (a hash of a public certificate), so errors may print them.
 */
import { createHash } from 'node:crypto';
import { TunnelError } from './errors.js';

export const PIN_PREFIX = 'sha256:';
const HEX_PIN = /^[0-9a-f]{64}$/;
const COLON_PIN = /^[0-9a-f]{2}(:[0-9a-f]{2}){31}$/;

/**
 * Parses a pin given as `sha256:<hex>` (64 hex digits, or 32 colon-separated pairs as `openssl x509
 * -fingerprint -sha256` prints them). Returns the canonical lowercase `sha256:<hex>` form.
 */
export function parseCaPin(text: string): string {
  const s = text.trim().toLowerCase();
  if (s.startsWith(PIN_PREFIX)) {
    const body = s.slice(PIN_PREFIX.length);
    if (HEX_PIN.test(body)) return PIN_PREFIX + body;
    if (COLON_PIN.test(body)) return PIN_PREFIX + body.replaceAll(':', '');
  }
  const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
  throw new TunnelError(
    'BAD_INPUT',
    `CA pin '${shown}' is not valid: expected sha256: followed by 64 hex digits (the relay prints it at start)`,
  );
}

/** The pin of a DER-encoded certificate. */
export function pinOfCertificate(der: Uint8Array): string {
  return PIN_PREFIX + createHash('sha256').update(der).digest('hex');
}

/** Throws CA_PIN_MISMATCH (naming both pins) unless `der` hashes to `expected` (a canonical pin). */
export function checkPin(expected: string, der: Uint8Array | undefined, where: string): void {
  if (!der || der.length === 0) {
    throw new TunnelError('CA_PIN_MISMATCH', `${where} presented no certificate; expected ${expected}`);
  }
  const actual = pinOfCertificate(der);
  if (actual !== expected) {
    throw new TunnelError(
      'CA_PIN_MISMATCH',
      `${where} presented a certificate with pin ${actual}, expected ${expected}; check the --ca-pin value or the relay`,
    );
  }
}
