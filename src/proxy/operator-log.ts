/** The operator log's per-request line: built only when it will be written. */
import type { FastifyRequest } from 'fastify';

/** Whether the request's logger writes info lines (pino's check; a logger without one is asked anyway). */
export function infoEnabled(req: FastifyRequest): boolean {
  return (req.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') !== false;
}
