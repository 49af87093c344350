/**
 * GET /api/v1/network (no credentials): where agents of this relay connect, as a registration tells them (the
 * same fields as a Tunnel's). Nothing here is secret: these are the relay's public ports.
 */
import { type Static, Type } from '@sinclair/typebox';
import { closed, Nullable } from './schema-parts.js';

export const RelayNetwork = Type.Object(
  {
    derpUrl: Type.String(),
    udpEndpoint: Nullable(Type.String()),
    stunEndpoint: Nullable(Type.String()),
  },
  closed,
);
export type RelayNetwork = Static<typeof RelayNetwork>;
