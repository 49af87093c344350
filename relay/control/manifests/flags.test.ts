import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTunnelError } from '../../../shared/errors.js';
import { validateYamlStream } from '../../../test/helpers/kubernetes-schema.js';
import { agentOptions } from './agent-flags.js';
import { agentManifests } from './agent-manifests.js';
import { parseImage, parseNamespace, parseNoProxy } from './flag-values.js';
import { MAX_REPLICAS, parseReplicas } from './relay-flags.js';
import { renderManifests } from './render.js';

/** `parse(text)` either returns a value or throws a TunnelError with one of `codes`. */
function parsedOrRefused<T>(parse: (t: string) => T, text: string, codes: string[]): T | null {
  try {
    return parse(text);
  } catch (err) {
    expect(isTunnelError(err) && codes.includes(err.code)).toBe(true);
    return null;
  }
}

const agentYaml = (flags: { image?: string; namespace?: string; noProxy?: string }) =>
  validateYamlStream(
    renderManifests(agentManifests(agentOptions({ cluster: 'c', relay: 'https://r.example', ...flags }))),
  );

describe('manifest flag parsers (properties)', () => {
  it('--replicas: a whole number 1..MAX or BAD_INPUT', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -5, max: 50 }).map(String)),
        (text) => {
          const n = parsedOrRefused(parseReplicas, text, ['BAD_INPUT']);
          if (n !== null)
            expect(Number.isInteger(n) && n >= 1 && n <= MAX_REPLICAS && String(n) === text).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('--image, --namespace, --no-proxy: what is accepted renders schema-valid manifests', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.stringMatching(/^[a-z0-9][a-z0-9./:@_-]{0,40}$/),
      fc.stringMatching(/^[a-z0-9.,*/-]{1,40}$/),
    );
    fc.assert(
      fc.property(text, (t) => {
        const image = parsedOrRefused(parseImage, t, ['BAD_INPUT']);
        if (image !== null) agentYaml({ image });
        const namespace = parsedOrRefused(parseNamespace, t, ['INVALID_NAME']);
        if (namespace !== null) agentYaml({ namespace });
        const noProxy = parsedOrRefused(parseNoProxy, t, ['BAD_INPUT']);
        if (noProxy !== null) expect(agentYaml({ noProxy }).length).toBeGreaterThan(0);
      }),
      { numRuns: 150 },
    );
  });
});
