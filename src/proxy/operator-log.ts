/**
 * The operator log's per-request line, and the request metrics recorded beside it: the line is built only when it
 * will be written, the metrics are counted for every request.
 */
import type { FastifyRequest } from 'fastify';
import { GatewayError, type ErrorKind } from '../translate/index.js';
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

/** The catalog kind each failed request ended with, for its metrics line (a weak map: nothing outlives the request). */
const failures = new WeakMap<FastifyRequest, ErrorKind>();

/**
 * Remembers which catalog entry a request failed with (a thrown `GatewayError`'s kind; anything else is
 * GW_INTERNAL, as the edge answers it), so that its outcome is counted by catalog code.
 */
export function noteFailure(request: FastifyRequest, e: unknown): void {
  failures.set(request, e instanceof GatewayError ? e.kind : 'GW_INTERNAL');
}

/** Counts one request in the metrics (when they are on), with the catalog kind it failed with, if any. */
export function recordRequest(request: FastifyRequest, r: Omit<RequestObservation, 'kind' | 'seconds'> & { ms: number }): void {
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
  const kind = failures.get(request);
  if (kind) o.kind = kind;
  metrics.request(o);
}
