/**
 * The operator log's per-request line, and the request metrics recorded beside it: the line is built only when it
 * will be written, the metrics are counted for every request, both from the request's outcome (request-outcome.ts).
 */
import type { FastifyRequest } from 'fastify';
import type { GatewayMetrics, RequestObservation } from './metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This gateway's metrics (absent: metrics are off). */
    metrics: GatewayMetrics | undefined;
  }
}

/** Whether the request's logger writes info lines (pino's check; a logger without one is asked anyway). */
export function infoEnabled(req: FastifyRequest): boolean {
  return (req.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') !== false;
}

/** Counts one request in the metrics (when they are on), by its outcome (which carries the catalog kind it failed with). */
export function recordRequest(request: FastifyRequest, r: Omit<RequestObservation, 'seconds'> & { ms: number }): void {
  const metrics = request.server.metrics;
  if (!metrics) return;
  // Built field by field (every request passes here: no rest/spread copies).
  const o: RequestObservation = {
    upstream: r.upstream,
    method: r.method,
    clientEra: r.clientEra,
    upstreamEra: r.upstreamEra,
    mode: r.mode,
    outcome: r.outcome,
    seconds: r.ms / 1000,
  };
  metrics.request(o);
}
