/** Before any integration file runs (in either lane): compile dist/ once if it is stale (test/helpers/build.ts). */
import { buildIfStale } from './helpers/build.js';

export default function setup(): void {
  buildIfStale();
}
