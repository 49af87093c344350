/** A cluster condition (Joined, Available), computed by relay/control/model/conditions.ts. */
import { type Static, Type } from '@sinclair/typebox';
import { closed } from './schema-parts.js';

export const ConditionStatus = Type.Union([
  Type.Literal('True'),
  Type.Literal('False'),
  Type.Literal('Unknown'),
]);
export type ConditionStatus = Static<typeof ConditionStatus>;

export const Condition = Type.Object(
  {
    type: Type.Union([Type.Literal('Joined'), Type.Literal('Available')]),
    status: ConditionStatus,
    reason: Type.String(),
    message: Type.String(),
    lastTransitionTime: Type.String(),
  },
  closed,
);
export type Condition = Static<typeof Condition>;
