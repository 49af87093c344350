/**
 * The layering rules of docs/ARCHITECTURE.md ("Folders and layers"), checked against the imports of every
 * production source file: no folder imports another folder that (directly or not) imports it back, the rules
 * below hold, and relay/ keeps at most ten loose files. A failure names the files whose import breaks the rule.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  folderEdges,
  folderOf,
  type ImportEdge,
  importEdges,
  importSpecifiers,
  sourceFiles,
} from './import-graph.js';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * [importer prefix, imported prefix, why]: no file under the first (and not under the second) imports a file under
 * the second.
 */
const NEVER: ReadonlyArray<readonly [string, string, string]> = [
  ['shared/', 'relay/', 'shared code serves both programs'],
  ['shared/', 'tunnel-client/', 'shared code serves both programs'],
  ['shared/', 'console/', 'shared code serves both programs'],
  ['shared/net/', 'shared/kit/', 'the packet path never imports the process kit'],
  ['shared/net/', 'shared/api/', 'the packet path knows no API bodies'],
  ['shared/api/', 'shared/net/', 'API bodies are plain data'],
  ['shared/api/', 'shared/kit/', 'API bodies are plain data'],
  ['relay/control/', 'relay/data/', 'control never imports data'],
  ['relay/control/', 'relay/fleet/', 'control never imports the fleet'],
  ['relay/control/', 'relay/start/', 'only the start wires the layers'],
  ['relay/ops/', 'relay/control/', 'ops is the bottom of the relay'],
  ['relay/ops/', 'relay/data/', 'ops is the bottom of the relay'],
  ['relay/ops/', 'relay/fleet/', 'ops is the bottom of the relay'],
  ['relay/ops/', 'relay/context/', 'ops is the bottom of the relay'],
  ['relay/data/', 'relay/start/', 'only the start wires the layers'],
  ['relay/fleet/mesh/', 'relay/data/', 'the mesh forwards bytes, it does not open sessions'],
  ['relay/', 'relay/cli/', 'the CLI is the top'],
  ['relay/', 'tunnel-client/', 'the programs share code through shared/ only'],
  ['tunnel-client/', 'relay/', 'the programs share code through shared/ only'],
  ['console/', 'relay/', 'the console takes the API types from shared/api'],
  ['console/', 'tunnel-client/', 'the console takes the API types from shared/api'],
];

const edges = importEdges(ROOT);

function describeEdge(e: ImportEdge): string {
  return `${e.from} -> ${e.to}`;
}

describe('dependency rules', () => {
  it('reads the imports the source has (a parser that found nothing would pass every rule)', () => {
    expect(sourceFiles(ROOT).length).toBeGreaterThan(300);
    expect(edges.length).toBeGreaterThan(1000);
    expect(edges).toContainEqual({
      from: 'relay/control/api/routes/clusters.ts',
      to: 'relay/control/store/types.ts',
    });
    expect(
      importSpecifiers(
        "import type { A } from './a.js';\nexport { b } from \"../b.js\";\nimport './c.js';\n" +
          "const d = await import('./d.js');\nimport x from 'node:fs';\n// from './not-an-import.js'\n",
      ),
    ).toEqual(['./a.js', '../b.js', './c.js', './d.js']);
  });

  it('has no folder cycles', () => {
    const folders = new Set(sourceFiles(ROOT).map(folderOf));
    const byPair = folderEdges(edges);
    const pairs = [...byPair.keys()].map((k) => {
      const [from, to] = k.split(' -> ') as [string, string];
      return { from, to };
    });
    const found = cycles(folders, pairs).map((members) => ({
      members,
      because: [...byPair.entries()]
        .filter(([k]) =>
          members.some((m) => k.startsWith(`${m} -> `) && members.includes(k.split(' -> ')[1]!)),
        )
        .map(([, e]) => describeEdge(e)),
    }));
    expect(found).toEqual([]);
  });

  it.each(NEVER)('no file under %s imports one under %s (%s)', (from, to) => {
    // A rule is about other folders: the imported folder's own files are not under it.
    const broken = edges
      .filter((e) => e.from.startsWith(from) && !e.from.startsWith(to) && e.to.startsWith(to))
      .map(describeEdge);
    expect(broken).toEqual([]);
  });

  it('keeps at most ten loose files in relay/', () => {
    const loose = readdirSync(join(ROOT, 'relay')).filter((f) => /\.tsx?$/.test(f) && !f.includes('.test.'));
    expect(loose.length).toBeLessThanOrEqual(10);
  });
});
