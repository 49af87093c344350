/**
 * Manifest objects to YAML for `kubectl apply -f -`: every object is validated against the Kubernetes
 * OpenAPI schema its kubernetes-models class carries before anything is printed, so a flag combination
 * that would give an object the API server refuses fails here (BAD_INPUT naming the object), not at apply.
 */
import { stringify } from 'yaml';
import { TunnelError } from '../../../shared/errors.js';

/** What every kubernetes-models object offers: its own schema check and its plain JSON form. */
export interface ManifestObject {
  readonly kind: string;
  readonly metadata?: { name?: string };
  validate(): void;
  toJSON(): unknown;
}

export function validateObjects(objects: readonly ManifestObject[]): void {
  for (const o of objects) {
    try {
      o.validate();
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new TunnelError(
        'BAD_INPUT',
        `the generated ${o.kind} ${o.metadata?.name ?? ''} does not pass the Kubernetes schema: ${why}`,
      );
    }
  }
}

/** The objects as one multi-document YAML stream, after `header` (comment lines, `# ` added). */
export function renderManifests(objects: readonly ManifestObject[], header: readonly string[] = []): string {
  validateObjects(objects);
  const docs = objects.map((o) => stringify(o.toJSON(), { lineWidth: 0 }));
  return `${header.map((l) => `# ${l}\n`).join('')}${docs.map((d) => `---\n${d}`).join('')}`;
}
