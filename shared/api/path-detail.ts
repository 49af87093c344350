/**
 * A connected cluster's path details (GET /api/v1/clusters/NAME `pathDetail`): where the direct path goes, the RTT
 * of each path, the last switch, and why the traffic is not direct with who said so (relay/control/store/path-reason.ts).
 */
import { type Static, Type } from '@sinclair/typebox';
import { closed, Nullable } from './schema-parts.js';

/** Who said a path's `reason`: the agent (its lease) or the hub holding its session; null with no reason. */
export const ReasonFrom = Nullable(Type.Union([Type.Literal('agent'), Type.Literal('hub')]));
export type ReasonFrom = Static<typeof ReasonFrom>;

export const PathDetail = Type.Object(
  {
    remote: Nullable(Type.String()),
    rttDirectMs: Nullable(Type.Number()),
    rttRelayedMs: Nullable(Type.Number()),
    lastSwitch: Nullable(Type.String()),
    reason: Nullable(Type.String()),
    reasonFrom: ReasonFrom,
  },
  closed,
);
export type PathDetail = Static<typeof PathDetail>;
