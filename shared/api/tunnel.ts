/**
 * What an accepted agent's data plane needs (the register and GET /api/v1/agent answers' `tunnel`): the hub's key,
 * the cluster's preshared key and address, and where to reach the relay.
 */
import { type Static, Type } from '@sinclair/typebox';
import { closed, Nullable } from './schema-parts.js';

export const Tunnel = Type.Object(
  {
    hubPublicKey: Type.String(),
    /** Secret: the agent keeps it in a 0600 file and never prints it. */
    presharedKey: Type.String(),
    /** The cluster's tunnel address, `A.B.C.D/32`. */
    address: Type.String(),
    hubAddress: Type.String(),
    relayUrl: Type.String(),
    derpUrl: Type.String(),
    /** host:port of the hub's WireGuard UDP port; null when it is off. */
    udpEndpoint: Nullable(Type.String()),
    /** host:port of the relay's STUN responder; null when it is off, absent from relays that do not send it. */
    stunEndpoint: Type.Optional(Nullable(Type.String())),
  },
  closed,
);
export type Tunnel = Static<typeof Tunnel>;
