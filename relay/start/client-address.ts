/**
 * A hub-mode relay's requests carry `clientAddress`: the connection's peer, or on a request another replica of the
 * fleet forwarded with the mesh key, the client address it names (relay/fleet/mesh/mesh-source.ts). The log serializer
 * reads it (log-serializers.ts), so request log lines name the client, not the forwarding replica.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestSource } from '../fleet/mesh/mesh-source.js';
import type { MeshKey } from '../ops/config/mesh-settings.js';

export function decorateClientAddress(app: FastifyInstance, key: MeshKey | null): void {
  app.decorateRequest('clientAddress', {
    getter(this: FastifyRequest): string | undefined {
      return requestSource(key, this.raw);
    },
  });
}
