import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { isTunnelError } from '../../errors.js';
import { effectiveValues, MAX_VALUES_FILE_BYTES, parseValuesYaml, readValuesFiles } from './values-file.js';

const json = fc.jsonValue({ maxDepth: 4 });
const mapping = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), json, { maxKeys: 5 });

describe('parseValuesYaml', () => {
  it('round-trips any mapping written as YAML or JSON', () => {
    fc.assert(
      fc.property(mapping, (m) => {
        const norm = JSON.parse(JSON.stringify(m));
        expect(parseValuesYaml(toYaml(norm), 'doc')).toEqual(norm);
        expect(parseValuesYaml(JSON.stringify(norm), 'doc')).toEqual(norm);
      }),
    );
  });

  it('treats an empty document as {} and rejects non-mappings with BAD_INPUT', () => {
    expect(parseValuesYaml('', 'doc')).toEqual({});
    expect(parseValuesYaml('# only a comment\n', 'doc')).toEqual({});
    for (const bad of ['- a\n- b\n', '3', 'just text', 'a: [unclosed']) {
      try {
        parseValuesYaml(bad, 'values file x');
        expect.unreachable(bad);
      } catch (err) {
        expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        expect((err as Error).message).toContain('values file x');
      }
    }
  });

  it('never throws anything but BAD_INPUT on arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        try {
          const v = parseValuesYaml(s, 'doc');
          expect(typeof v).toBe('object');
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
        }
      }),
    );
  });
});

describe('readValuesFiles', () => {
  it('layers files in order over the relay values and names a bad file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'values-'));
    try {
      const a = join(dir, 'a.yaml');
      const b = join(dir, 'b.yaml');
      writeFileSync(a, 'img: {tag: a, repo: r}\nlist: [1, 2]\n');
      writeFileSync(b, 'img: {tag: b}\nlist: [3]\n');
      const files = readValuesFiles([a, b]);
      expect(effectiveValues({ img: { pull: 'always' }, other: 1 }, files)).toEqual({
        img: { pull: 'always', tag: 'b', repo: 'r' },
        list: [3],
        other: 1,
      });
      const big = join(dir, 'big.yaml');
      writeFileSync(big, `k: "${'x'.repeat(MAX_VALUES_FILE_BYTES)}"\n`);
      for (const bad of [join(dir, 'missing.yaml'), big]) {
        try {
          readValuesFiles([a, bad]);
          expect.unreachable();
        } catch (err) {
          expect(isTunnelError(err, 'BAD_INPUT')).toBe(true);
          expect((err as Error).message).toContain(bad);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
