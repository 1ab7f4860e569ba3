/** The HTTP edge: Fastify app, MCP endpoints for both eras, host checks, error mapping. */
export { hostPolicy } from './host-check.js';
export { Authenticator } from './auth.js';
export { createAuditLog } from './audit-sink.js';
export { buildEdge, type EdgeEndpoint, type EdgeOptions, type FederationPlan } from './server.js';
export { drainThenClose } from './drain.js';
export type { PassthroughUpstream } from './passthrough-paths.js';
export { GatewayMetrics } from './metrics.js';
