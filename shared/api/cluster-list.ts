/** GET /api/v1/clusters: one page of clusters (`?limit=N&continue=TOKEN`). */
import { type Static, Type } from '@sinclair/typebox';
import { Cluster } from './cluster.js';
import { Continue, closed } from './schema-parts.js';

export const ClusterList = Type.Object({ items: Type.Array(Cluster), continue: Continue }, closed);
export type ClusterList = Static<typeof ClusterList>;
