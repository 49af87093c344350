import fc from 'fast-check';
import { Container } from 'kubernetes-models/v1/Container';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { parseQuantity } from './quantity.js';
import { parseResourceList, resolveResources } from './resources.js';

const DEFAULTS = { requests: { cpu: '10m' }, limits: { memory: '1Gi' } };

/** The Kubernetes schema's own verdict on a quantity (the `quantity` format of ResourceRequirements). */
function schemaAccepts(q: string): boolean {
  try {
    new Container({ name: 'c', resources: { limits: { cpu: q } } }).validate();
    return true;
  } catch {
    return false;
  }
}

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return isTunnelError(err) ? `${err.code}: ${err.message}` : `not a TunnelError: ${String(err)}`;
  }
  return 'no error';
}

describe('parseQuantity', () => {
  it('accepts what the seeds pass and keeps the text', () => {
    expect(parseQuantity('800m', 'x')).toEqual({ text: '800m', value: 0.8 });
    expect(parseQuantity('800Mi', 'x').value).toBe(800 * 2 ** 20);
    expect(parseQuantity('1.5', 'x').value).toBe(1.5);
  });

  it('refuses bad and zero quantities naming the value', () => {
    for (const bad of ['', '800MB', '-1', '1e3', 'cpu', '1 Mi', '0', '0m']) {
      expect(codeOf(() => parseQuantity(bad, '--resource-limits cpu'))).toContain(
        `BAD_INPUT: --resource-limits cpu ${JSON.stringify(bad)}`,
      );
    }
  });

  it('accepts only what the Kubernetes schema accepts (property)', () => {
    const suffix = fc.constantFrom(
      '',
      'm',
      'k',
      'M',
      'G',
      'Ki',
      'Mi',
      'Gi',
      'Ti',
      'E',
      'Ei',
      'x',
      'mi',
      'KB',
    );
    const number = fc.oneof(
      fc.nat().map(String),
      fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => `${a}.${b}`),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(number, suffix, (n, s) => {
        const text = `${n}${s}`;
        let accepted = false;
        try {
          parseQuantity(text, 'q');
          accepted = true;
        } catch (err) {
          expect(isTunnelError(err) && err.code === 'BAD_INPUT').toBe(true);
        }
        if (accepted) expect(schemaAccepts(text)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('resource flags (the seeds meaning)', () => {
  it('Default keeps the built-in resources, BestEffort sets none', () => {
    expect(resolveResources({}, DEFAULTS)).toEqual(DEFAULTS);
    expect(resolveResources({ resourceQosClass: 'Default' }, DEFAULTS)).toEqual(DEFAULTS);
    expect(resolveResources({ resourceQosClass: 'BestEffort' }, DEFAULTS)).toEqual({});
  });

  it('ResourceRequirement uses exactly the given lists', () => {
    expect(
      resolveResources(
        {
          resourceQosClass: 'ResourceRequirement',
          resourceLimits: 'cpu=800m,memory=800Mi',
          resourceRequests: 'cpu=400m,memory=400Mi',
        },
        DEFAULTS,
      ),
    ).toEqual({ limits: { cpu: '800m', memory: '800Mi' }, requests: { cpu: '400m', memory: '400Mi' } });
    expect(
      resolveResources({ resourceQosClass: 'ResourceRequirement', resourceLimits: 'memory=1Gi' }, DEFAULTS),
    ).toEqual({
      limits: { memory: '1Gi' },
    });
  });

  it('refuses what the seeds would not mean, naming the flag and value', () => {
    const cases: [Record<string, string>, string][] = [
      [{ resourceQosClass: 'Guaranteed' }, '--resource-qos-class "Guaranteed"'],
      [
        { resourceQosClass: 'BestEffort', resourceLimits: 'cpu=1' },
        'need --resource-qos-class ResourceRequirement',
      ],
      [{ resourceLimits: 'cpu=1' }, 'need --resource-qos-class ResourceRequirement (got Default)'],
      [{ resourceQosClass: 'ResourceRequirement' }, 'needs --resource-limits'],
      [
        { resourceQosClass: 'ResourceRequirement', resourceLimits: 'cpu=800q' },
        '--resource-limits cpu "800q"',
      ],
      [
        { resourceQosClass: 'ResourceRequirement', resourceLimits: 'gpu=1' },
        '--resource-limits entry "gpu=1"',
      ],
      [{ resourceQosClass: 'ResourceRequirement', resourceLimits: 'cpu=1,cpu=2' }, 'names cpu twice'],
      [
        { resourceQosClass: 'ResourceRequirement', resourceLimits: 'cpu=500m', resourceRequests: 'cpu=1' },
        '--resource-requests cpu=1 is above --resource-limits cpu=500m',
      ],
    ];
    for (const [flags, text] of cases)
      expect(codeOf(() => resolveResources(flags, DEFAULTS))).toContain(text);
  });

  it('parses any list it accepts into valid names and quantities (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        try {
          const m = parseResourceList(text, '--resource-limits');
          for (const q of m.values()) expect(schemaAccepts(q.text)).toBe(true);
        } catch (err) {
          expect(isTunnelError(err) && err.code === 'BAD_INPUT').toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
