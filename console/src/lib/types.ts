/**
 * The API objects the console reads (docs/API.md): the static types of shared/api's schemas, imported as types
 * only, so no schema code reaches the bundle.
 */
export type { AccessKey, CreatedToken } from '../../../shared/api/access-keys.js';
export type { AuditItem } from '../../../shared/api/audit.js';
export type { Cluster } from '../../../shared/api/cluster.js';
export type { Bootstrap, ClusterWithBootstrap } from '../../../shared/api/cluster-create.js';
export type { Condition } from '../../../shared/api/condition.js';
export type { PathDetail } from '../../../shared/api/path-detail.js';
export type { PathChange, PathHistory } from '../../../shared/api/path-history.js';
export type { WhoAmI } from '../../../shared/api/whoami.js';
