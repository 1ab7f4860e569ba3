/** Clients of upstream MCP servers behind one seam (UpstreamClient): era probe, legacy sessions and their pool, both eras' clients. */
export {
  fetchFailure,
  SessionExpiredError,
  UpstreamBusyError,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from './errors.js';
export { MAX_UPSTREAM_MESSAGE_BYTES, readMessages } from './messages.js';
export { drainToResponse, LegacyCall, LegacySession, type LegacySessionOptions } from './legacy-session.js';
export { LegacySessionPool, type PoolOptions, type SessionKey } from './pool.js';
export { probeEra } from './probe.js';
export {
  drain,
  requestOnce,
  type CallEvent,
  type UpstreamCall,
  type UpstreamCaller,
  type UpstreamClient,
  type UpstreamListen,
  type UpstreamStats,
} from './client.js';
export { LegacyUpstreamClient, sessionKeyOf } from './legacy-client.js';
export { ModernUpstreamClient, type ModernClientOptions } from './modern-client.js';
