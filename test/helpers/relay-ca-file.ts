/**
 * The relay's CA certificate as a file for curl's --cacert/--proxy-cacert: read from `tunnel-relay kubeconfig
 * NAME --output json` (its certificate-authority-data) with the admin environment, written to a fresh
 * temporary directory.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { RELAY_BIN, run, tempDir } from '../cli-harness.js';

export async function writeRelayCaFile(
  adminEnv: NodeJS.ProcessEnv,
  cluster: string,
  prefix: string,
): Promise<string> {
  const k = await run(RELAY_BIN, ['kubeconfig', cluster, '--output', 'json'], adminEnv);
  expect(k.code, k.stderr).toBe(0);
  const caFile = join(tempDir(`${prefix}-`), 'relay-ca.pem');
  const ca = JSON.parse(k.stdout).clusters[0].cluster['certificate-authority-data'] as string;
  writeFileSync(caFile, Buffer.from(ca, 'base64'));
  return caFile;
}
