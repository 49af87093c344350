/**
 * OpenSSL picks its ChaCha20-Poly1305 code by the CPU's features (AVX-512, AVX2, SSSE3, plain C), and the machines
 * the relay and agent run on differ. OPENSSL_ia32cap masks features off for one process, so each of those code
 * paths runs here in a child (test/helpers/fixtures/aead-child.cjs) and must give node:crypto's bytes, unmasked in
 * this process, at the sizes the tunnel uses and at each SIMD block edge.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeAead, opensslAead, writeNonce } from './aead.js';

const CHILD = fileURLToPath(new URL('../../../../test/helpers/fixtures/aead-child.cjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * Masks in OpenSSL's syntax: `~` clears bits of CPUID leaf 1 (ECX:EDX, before the colon) or leaf 7 (ECX:EBX,
 * after it). AVX-512F is leaf 7 EBX bit 16, AVX-512VL bit 31, AVX2 bit 5; AVX is leaf 1 ECX bit 28, SSSE3 bit 9.
 */
const MASKS = [
  { cpu: 'without AVX-512', mask: ':~0x80010000' },
  { cpu: 'without AVX-512 and AVX2', mask: ':~0x80010020' },
  { cpu: 'without AVX, AVX2, AVX-512 or SSSE3 (plain C and SSE2)', mask: '~0x1000020000000000:~0x80010020' },
];

/** Sizes around 64-byte blocks and the 4- and 8-block SIMD strides, and the tunnel's packet sizes. */
const SIZES = [
  0, 1, 15, 16, 63, 64, 65, 127, 128, 255, 256, 257, 511, 512, 513, 1024, 1420, 4096, 16384, 65503,
];

function bytes(seed: string, n: number): Buffer {
  const out = Buffer.alloc(n);
  for (let at = 0, i = 0; at < n; i++)
    at += createHash('sha256').update(`${seed}/${i}`).digest().copy(out, at);
  return out;
}

function cases() {
  return SIZES.map((size, i) => {
    const key = bytes(`key${i}`, 32);
    const nonce = writeNonce(Buffer.alloc(12), BigInt(i) * 0x1_0000_0001n);
    const plaintext = bytes(`pt${i}`, size);
    const aad = i % 3 === 0 ? null : bytes(`aad${i}`, i % 40);
    const ref = Buffer.alloc(size + 16);
    nodeAead.seal(ref, key, nonce, plaintext, aad ?? undefined);
    const b64 = (b: Buffer) => b.toString('base64');
    return {
      key: b64(key),
      nonce: b64(nonce),
      plaintext: b64(plaintext),
      aad: aad && b64(aad),
      ref: b64(ref),
      flip: i * 7,
    };
  });
}

describe('the OpenSSL AEAD on CPUs without some SIMD features', () => {
  it('the addon loads here (its code paths are what the masks change)', () => {
    expect(opensslAead()?.name).toBe('openssl');
  });

  for (const { cpu, mask } of MASKS) {
    it(`${cpu}: seals node:crypto's bytes, opens them, refuses a forgery`, () => {
      const r = spawnSync(process.execPath, [CHILD], {
        cwd: ROOT,
        input: JSON.stringify(cases()),
        env: { ...process.env, OPENSSL_ia32cap: mask },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const answers = JSON.parse(r.stdout) as {
        size: number;
        sealEqual: boolean;
        opened: boolean;
        forgeryRefused: boolean;
      }[];
      expect(answers).toEqual(
        SIZES.map((size) => ({ size, sealEqual: true, opened: true, forgeryRefused: true })),
      );
    });
  }
});
