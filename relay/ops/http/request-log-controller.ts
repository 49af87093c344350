/**
 * Fastify's per-request log lines ("incoming request", "request completed") at debug instead of info, so a relay at
 * the default level logs one line per event, not two per API call and lease renewal. A request that errored is still
 * logged at error.
 */
import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

export class DebugRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (error) {
      super.requestCompleted(error, request, reply);
      return;
    }
    if (this.isLogDisabled(request)) return;
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
