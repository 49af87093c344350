/** A cluster registration's status: Pending until an administrator accepts or denies it. */
import { type Static, Type } from '@sinclair/typebox';

export const ClusterStatus = Type.Union([
  Type.Literal('Pending'),
  Type.Literal('Accepted'),
  Type.Literal('Denied'),
]);
export type ClusterStatus = Static<typeof ClusterStatus>;
