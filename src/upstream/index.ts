/** Clients of upstream MCP servers behind one seam (UpstreamClient): era probe and availability, legacy sessions and their pool, both eras' clients. */
export {
  downReason,
  fetchFailure,
  UpstreamBusyError,
  UpstreamHttpError,
  UpstreamTaskLostError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from './errors.js';
export type { UpstreamEras } from './probe.js';
export { ExchangeStop } from './http.js';
export { upstreamAvailability, UpstreamAvailability, UpstreamDownError, type AvailabilityChange } from './availability.js';
export { callNow, hideTask, isFinal, queuedFinal, requestOnce, settledResponse, taskAsCall, type TaskCallOptions } from './call-wrappers.js';
export type {
  CallEvent,
  CallOptions,
  PassedRequest,
  UpstreamStats,
  SessionBounds,
  UpstreamTask,
  UpstreamTaskRef,
  UpstreamTaskSnapshot,
  UpstreamCall,
  UpstreamCaller,
  UpstreamClient,
  UpstreamListen,
} from './client.js';
export { LegacyUpstreamClient } from './legacy/client.js';
export { InputLedger } from './input-ledger.js';
export { InFlight } from './in-flight.js';
export { PolledTask, type PolledTaskOptions } from './polled-task.js';
export { ModernUpstreamClient } from './modern/client.js';
export { StdioHost, type StdioHostStatus } from './stdio/host.js';
export { annotateTrace, endHttpSpan, startClientTrace, startServerTrace, type RequestTrace, type RequestTraceAttributes } from './tracing.js';
