/**
 * The runtime: what each tools/call becomes (a pure decision), the MRTR bridge, listen streams, and the task
 * lifecycles behind TaskRuntime. Named exports: the layer's public surface, nothing of its insides.
 */
export {
  hidesTool,
  hidesTools,
  replaceHeaders,
  replaceRules,
  runtimeServesTools,
  withoutHiddenTools,
  wrapsTools,
  type CallerContext,
  type TaskPolicy,
  type UpstreamRoute,
} from './route.js';
export { MissingCapabilityError } from './conversation.js';
export {
  callRoute,
  decideCall,
  type CallDecision,
  type CallFacts,
  type CallRoute,
  type CallTurn,
  type CallWindow,
  type TaskMode,
} from './call-decision.js';
export { InvalidRequestStateError, MrtrBridge, type ForwardHooks, type MrtrOptions, type Outcome, type RelayedDispatch } from './mrtr-bridge.js';
export { runListen, type ListenHooks } from './listen-bridge.js';
export { InvalidCursorError, TaskAlreadyTerminalError, TooManyTasksError, UnknownTaskError } from './task-limits.js';
export { TaskRuntime, type LiveTaskLimits, type TaskRuntimeOptions } from './task-runtime.js';
export { InstanceBus, InstanceGoneError, RemoteError, mintInstanceId, type BusContext, type BusHandler } from './instance-bus.js';
export { Sealer } from './sealing.js';
/** Store errors the edge maps, re-exported so the edge depends on the runtime only. */
export { StoreFullError, StoreUnavailableError, type SharedValues } from '../store/index.js';
export { NO_AUDIT, principalFingerprint, teeAudit, type AuditEvent, type AuditFields, type AuditLog } from './audit.js';
export { NO_TASK_METRICS, type TaskMetrics } from './metrics.js';
