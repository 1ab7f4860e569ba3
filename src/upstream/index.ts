/** Clients of upstream MCP servers behind one seam (UpstreamClient): era probe and availability, legacy sessions and their pool, both eras' clients. */
export {
  downReason,
  fetchFailure,
  SessionExpiredError,
  UpstreamBusyError,
  UpstreamHttpError,
  UpstreamTaskLostError,
  UpstreamNotMcpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from './errors.js';
export { MAX_UPSTREAM_MESSAGE_BYTES, exchange, UpstreamResponse } from './http.js';
export { QueuedCall } from './call-queue.js';
export { LegacyCall } from './legacy-call.js';
export { LegacySession, type LegacySessionOptions } from './legacy-session.js';
export { LegacySessionPool, type PoolOptions, type SessionKey } from './pool.js';
export { probeLegacy, probeUpstream, type ProbeTarget, type UpstreamEras } from './probe.js';
export {
  pinnedEras,
  upstreamAvailability,
  UpstreamAvailability,
  UpstreamDownError,
  type AvailabilityChange,
  type AvailabilityOptions,
  type EraSetting,
  type UpstreamAvailabilityConfig,
} from './availability.js';
export { callNow, drain, hideTask, requestOnce, taskAsCall, type TaskCallOptions } from './call-wrappers.js';
export type {
  CallEvent,
  CallOptions,
  UpstreamTask,
  UpstreamTaskRef,
  UpstreamTaskSnapshot,
  UpstreamCall,
  UpstreamCaller,
  UpstreamClient,
  UpstreamListen,
  UpstreamStats,
} from './client.js';
export { LegacyUpstreamClient, sessionKeyOf } from './legacy-client.js';
export { InputLedger } from './input-ledger.js';
export { LegacyUpstreamTask } from './legacy-task.js';
export { PolledTask, type PolledTaskOptions } from './polled-task.js';
export { ModernUpstreamClient, type ModernClientOptions } from './modern-client.js';
export { ModernUpstreamTask } from './modern-task.js';
export { StdioHost, describeExit, type StdioHostOptions, type StdioHostStatus } from './stdio-host.js';
export { childEnv, INHERITED_ENV, type ChildExit, type ChildState, type RestartPolicy } from './stdio-child.js';
export {
  annotateTrace,
  endHttpSpan,
  startClientTrace,
  startServerTrace,
  type ClientTrace,
  type RequestTrace,
  type RequestTraceAttributes,
} from './tracing.js';
