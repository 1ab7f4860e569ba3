/** The HTTP edge: Fastify app, MCP endpoints for both eras, host checks, error mapping. */
export { checkHostOrigin, hostPolicy, isLoopbackHost, type HostPolicy } from './host-check.js';
export { ANONYMOUS, PrincipalHasher, principalOf, type PrincipalSource } from './principal.js';
export { AuthError, Authenticator, identityOf, registerAuth, type AuthFailure, type AuthSettings, type AuthenticatorOptions, type Identity } from './auth.js';
export { exceptionToEdge, failureToEdge, upstreamErrorStatus, type EdgeError } from './errors.js';
export { ResponseChannel } from './response.js';
export { registerMcpEndpoint, type EndpointOptions, type EndpointStats } from './mcp-endpoint.js';
export { createAuditLog, type AuditLogger } from './audit-sink.js';
export { buildEdge, type EdgeEndpoint, type EdgeOptions } from './server.js';
export { EdgeDrain } from './drain.js';
export { LegacySessionRegistry, type SessionEndReason, type SessionEntry, type SessionRegistryOptions, type SessionStore } from './legacy-face-sessions.js';
export { LegacyFace, type LegacyFaceOptions, type LegacyFaceTarget } from './legacy-face.js';
export { passthroughRoutes, registerPassthroughPaths, type PassthroughRoute, type PassthroughUpstream } from './passthrough-paths.js';
export {
  GatewayMetrics,
  BoundedLabels,
  KNOWN_METHODS,
  METRIC_PREFIX,
  methodLabel,
  outcomeLabel,
  type MetricsSettings,
  type RequestObservation,
  type ScrapeSources,
} from './metrics.js';
export { Readiness, type ReadinessOptions, type ReadinessReport } from './health.js';
